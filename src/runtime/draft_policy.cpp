// DraftPolicy: a linear cost fit, per-position acceptance estimates, and the argmax of
// expected tokens per millisecond.
#include "runtime/draft_policy.h"

#include <algorithm>
#include <cmath>

namespace gs {

namespace {
constexpr double kPriorAccept = 0.5;   // q_i prior = 0.5^i
constexpr double kPriorWeight = 2.0;   // as if two rounds had been seen
constexpr double kAcceptDecay = 0.9;   // memory of ~10 rounds: prompts change character fast
constexpr double kMinObservations = 6;  // target passes timed before the cost fit is trusted
}  // namespace

void LinearCostFit::observe(double x, double y_ms) {
  if (!(y_ms >= 0) || !std::isfinite(y_ms)) return;
  w_ = w_ * decay_ + 1;
  sx_ = sx_ * decay_ + x;
  sy_ = sy_ * decay_ + y_ms;
  sxx_ = sxx_ * decay_ + x * x;
  sxy_ = sxy_ * decay_ + x * y_ms;
}

bool LinearCostFit::has_slope() const {
  if (w_ <= 0) return false;
  const double var = sxx_ / w_ - (sx_ / w_) * (sx_ / w_);
  return var > 1e-3;
}

double LinearCostFit::slope() const {
  if (!has_slope()) return 0.0;
  const double mx = sx_ / w_, my = sy_ / w_;
  const double b = (sxy_ / w_ - mx * my) / (sxx_ / w_ - mx * mx);
  return std::max(0.0, b);
}

double LinearCostFit::intercept() const {
  if (w_ <= 0) return 0.0;
  const double mx = sx_ / w_, my = sy_ / w_;
  return std::max(0.0, my - slope() * mx);
}

double LinearCostFit::predict(double x) const { return intercept() + slope() * x; }

AcceptanceTracker::AcceptanceTracker(int k_max)
    : q_(static_cast<size_t>(std::max(k_max, 1))), weight_(static_cast<size_t>(std::max(k_max, 1)), kPriorWeight) {
  double p = 1.0;
  for (double& q : q_) q = (p *= kPriorAccept);
}

void AcceptanceTracker::observe(int n_drafted, int n_accepted) {
  if (n_drafted > static_cast<int>(q_.size())) {
    const size_t old = q_.size();
    q_.resize(static_cast<size_t>(n_drafted));
    weight_.resize(static_cast<size_t>(n_drafted), kPriorWeight);
    for (size_t i = old; i < q_.size(); ++i) q_[i] = q_[i - 1] * kPriorAccept;
  }
  for (int i = 0; i < n_drafted; ++i) {
    const double hit = i < n_accepted ? 1.0 : 0.0;
    const double w = weight_[static_cast<size_t>(i)] * kAcceptDecay;
    q_[static_cast<size_t>(i)] = (q_[static_cast<size_t>(i)] * w + hit) / (w + 1);
    weight_[static_cast<size_t>(i)] = w + 1;
  }
  // q_i is a probability of a longer prefix: never above q_{i-1}.
  for (size_t i = 1; i < q_.size(); ++i) q_[i] = std::min(q_[i], q_[i - 1]);
}

double AcceptanceTracker::expected_tokens(int k) const {
  double e = 1.0;
  for (int i = 0; i < k && i < static_cast<int>(q_.size()); ++i) e += q_[static_cast<size_t>(i)];
  return e;
}

int DraftPolicy::choose(const AcceptanceTracker& acceptance, int k_max, int n_decoding, int rounds_since_draft) {
  if (k_max <= 0) return 0;
  // Until the fits have seen both one-row and multi-row passes, alternate drafted and
  // plain rounds to give them both.
  if (!target_.has_slope() || target_.weight() < kMinObservations || !drafter_.has_data()) {
    warm_draft_ = !warm_draft_;
    return warm_draft_ ? k_max : 0;
  }
  if (rounds_since_draft >= kProbeEvery) return k_max;
  const double n = std::max(n_decoding, 1);
  const double a = target_.intercept() / n;  // this sequence's share of the fixed cost
  const double b = target_.slope();
  const double d = drafter_.predict(n) / n;  // one drafter step, per sequence
  int best_k = 0;
  double best_rate = 1.0 / std::max(a + b, 1e-9);
  for (int k = 1; k <= k_max; ++k) {
    const double rate = acceptance.expected_tokens(k) / std::max(a + b * (k + 1) + k * d, 1e-9);
    if (rate > best_rate * 1.02) {  // a draft must pay at least 2% to be worth the noise
      best_rate = rate;
      best_k = k;
    }
  }
  return best_k;
}

}  // namespace gs
