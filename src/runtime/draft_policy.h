// Adaptive draft length: how many drafts a sequence's next round should propose so that
// its expected tokens per second is highest, from measured pass costs and the sequence's
// own acceptance history. Drafting never changes the output (the acceptance rule is
// exact), only its speed, so this trades nothing but time; with it, MTP is never much
// slower than plain decoding (issue 4, bug-case 36).
//
// Model (per round of one sequence, k drafts):
//   expected tokens  E(k) = 1 + sum_{i=1..k} q_i,  q_i = P(the first i drafts are accepted)
//   cost             C(k) = T(k + 1 rows) + k * D,  T(rows) = a + b * rows (target pass),
//                                                   D = one drafter step
// and k* = argmax_k E(k) / C(k) over 0..k_max. On a GPU a pass over 5 rows costs about one
// over 1 (b << a), so k* is large whenever drafts are accepted; on a compute-bound CPU
// (T(5) ~ 5 T(1)) k* is 0 unless nearly every draft is accepted.
#pragma once

#include <cstdint>
#include <vector>

namespace gs {

// Exponentially weighted least-squares fit of y = a + b x (milliseconds against rows).
class LinearCostFit {
 public:
  explicit LinearCostFit(double decay = 0.97) : decay_(decay) {}
  void observe(double x, double y_ms);
  // Observations exist at two or more distinct x (else the slope is unknown).
  bool has_slope() const;
  bool has_data() const { return w_ > 0; }
  double weight() const { return w_; }
  double predict(double x) const;
  double intercept() const;
  double slope() const;

 private:
  double decay_;
  double w_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
};

// Per-sequence estimates of q_i (exponentially weighted, with a prior).
class AcceptanceTracker {
 public:
  AcceptanceTracker() : AcceptanceTracker(8) {}
  explicit AcceptanceTracker(int k_max);
  // A round that proposed n_drafted drafts, of which the first n_accepted were accepted.
  void observe(int n_drafted, int n_accepted);
  // E(k) = 1 + sum_{i<=k} q_i.
  double expected_tokens(int k) const;

 private:
  std::vector<double> q_;       // q_[i - 1] = P(first i accepted)
  std::vector<double> weight_;  // evidence behind each estimate
};

// Chooses k for one sequence's next round. `n_decoding` sequences share the step (the
// target pass's fixed cost a is split among them). `rounds_since_draft` counts this
// sequence's rounds without drafts: every `probe_every`-th such round drafts k_max, so
// that acceptance estimates stay current after a quiet stretch.
class DraftPolicy {
 public:
  static constexpr int kProbeEvery = 16;

  void observe_target(int rows, double ms) { target_.observe(rows, ms); }
  void observe_drafter(int seqs, double ms) { drafter_.observe(seqs, ms); }
  int choose(const AcceptanceTracker& acceptance, int k_max, int n_decoding, int rounds_since_draft);

 private:
  bool warm_draft_ = false;  // alternates drafted and plain rounds until the fits are ready
  LinearCostFit target_;
  LinearCostFit drafter_;
};

}  // namespace gs
