// SpeculativeDecoder: one engine step over many sequences, each either appending prompt
// tokens (prefill) or generating (decode), the decoding ones with or without MTP drafts.
//   round (spec §4.8): the drafter proposes up to k tokens from the newest token and the
//   target's final normed hidden state of the row that produced it (Decision 5), all at
//   position P; one target pass verifies [newest, d1..dk] of every sequence at once; each
//   row is sampled with the sequence's own sampler chain, accepted while it equals the
//   draft (Decision 3: exact for argmax drafts at any temperature); the first mismatch or
//   the bonus token ends the round; the cache is rolled back past the last kept position.
// With no drafter, or draft_max 0, a decode is plain one-token decoding through the same
// code, so the engine uses this for every sequence.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/drafter.h"
#include "model/gemma4_model.h"
#include "runtime/draft_policy.h"
#include "runtime/model_runner.h"
#include "runtime/sampler.h"
#include "runtime/spec_stats.h"

namespace gs {

struct SpecOptions {
  int draft_max = 4;          // most drafts per round of any sequence (plans the drafter)
  float draft_p_min = 0.0f;   // stop drafting when the draft's drafter probability is below this
  DraftSlidingWindow sliding = DraftSlidingWindow::kWindow;
  // Choose each round's draft count from measured pass costs and the sequence's acceptance
  // (runtime/draft_policy.h) instead of always drafting draft_max: the output is the same,
  // the speed never much below plain decoding. Off for exact, repeatable draft counts.
  bool adaptive = false;
};

// One sequence's part of a step.
struct SeqWork {
  int seq = -1;                        // a ModelRunner sequence, start()ed
  Sampler* sampler = nullptr;          // the sequence's chain; its history gets every prompt and emitted token
  std::span<const int32_t> prefill;    // non-empty: append these prompt tokens (no pending token allowed)
  bool sample = true;                  // prefill: sample the first generated token from the last row
  int draft_max = 0;                   // decode: drafts this round (0: plain decoding)
  int max_tokens = std::numeric_limits<int>::max();  // decode: emit at most this many (>= 1)
  std::span<const int32_t> stop_tokens;  // decode: emitting one of these ends the round
  // Non-empty: only these token ids may be sampled this step (every other logit is -inf
  // before the sampler chain, so greedy, temperature, top-k/p and min-p all see the masked
  // distribution); a decode then drafts nothing, so verify never judges a masked row.
  // Used by grammar-style output constraints (engine/completion_constraint.h).
  std::span<const int32_t> allowed_tokens;
  // Grammar-style constraints that allow drafting (allowed_tokens empty): the allowed ids
  // at verify position i, given the drafts before it (`drafts_before` has i entries; the
  // calls come in order i = 0, 1, ...). An empty result leaves that position free. The
  // drafts are picked under the same masks (draft_stepwise), and verify samples the masked
  // distributions, so the output is exactly that of masked plain decoding.
  std::function<std::span<const int32_t>(std::span<const int32_t> drafts_before)> allowed_after;

  // Results of the step:
  std::vector<int32_t> tokens;   // emitted tokens, in order (the last is the new pending token)
  std::vector<int> logit_rows;   // ModelRunner output row that produced each token (until the next step)
  int n_drafted = 0;
  int n_accepted = 0;
};

class SpeculativeDecoder {
 public:
  // `runner` must outlive the decoder. `assistant` may be null (no drafting). Errors:
  // those of Gemma4DrafterForward::create (a mismatched drafter, bug-case 35), or
  // kInvalidArgument when the runner's passes cannot hold a verify batch.
  static Result<std::unique_ptr<SpeculativeDecoder>> create(ModelRunner& runner,
                                                            std::shared_ptr<const Gemma4Model> assistant,
                                                            const SpecOptions& options);

  // Forgets sequence `seq`'s pending token and counters (call for a new sequence).
  Status start(int seq);

  // Runs one step. Each sequence at most once. A decode needs a pending token (from a
  // prefill with sample, or an earlier decode); it is fed at position P = the cache length.
  // Errors: kInvalidArgument for bad work (unknown or repeated sequence, decode without a
  // pending token, prefill with one, null sampler, max_tokens < 1), kOutOfRange when a
  // sequence's context is full, and the runner's errors; on error no sequence changes.
  Status step(std::span<SeqWork> work);

  bool has_drafter() const { return drafter_ != nullptr; }
  // The newest token of `seq` (not yet in the cache), or -1.
  int32_t pending_token(int seq) const;
  const SpecStats& stats() const { return stats_; }
  const SpecStats& seq_stats(int seq) const { return seqs_.at(static_cast<size_t>(seq)).stats; }
  ModelRunner& runner() { return runner_; }
  const SpecOptions& options() const { return options_; }

  // The pending token and its hidden state, to return to a cached point (tests, prefix
  // reuse): restore() truncates the cache to the snapshot's length.
  struct Snapshot {
    int32_t length = 0;
    int32_t pending = -1;
    std::vector<float> hidden;
  };
  Result<Snapshot> save(int seq) const;
  Status restore(int seq, const Snapshot& snapshot);

 private:
  SpeculativeDecoder(ModelRunner& runner) : runner_(runner) {}
  struct SeqState {
    bool started = false;
    int32_t pending = -1;  // newest token, not yet in the cache
    SpecStats stats;
    AcceptanceTracker acceptance;   // adaptive drafting: this sequence's q_i
    int rounds_since_draft = 0;     // adaptive drafting: plain rounds in a row
  };
  Status draft(std::span<SeqWork> work, std::vector<std::vector<int32_t>>* drafts);
  // The draft steps one at a time with the picks made on the host, each constrained row's
  // among its allowed_after ids (the drafts then follow the constraint, so verify can
  // accept them). `active`: work indices in drafter row order; `limit`: drafts per work
  // index; h_in rows and `toks` / `pos` / `rows` as for run_chain.
  Status draft_stepwise(std::span<SeqWork> work, const std::vector<int>& active, const std::vector<int>& limit,
                        std::vector<int32_t> toks, const std::vector<int32_t>& pos, const std::vector<int32_t>& rows,
                        int steps, std::vector<std::vector<int32_t>>* drafts);
  // `logits` with every token outside `allowed` at -inf (a view of masked_logits_, valid
  // until the next call); `logits` itself when `allowed` is empty.
  std::span<const float> masked(std::span<const float> logits, std::span<const int32_t> allowed);
  // The error of a step whose row for `seq` could not be sampled (Sampler::last_logits_ok).
  static Status non_finite_logits(int seq);

  ModelRunner& runner_;
  SpecOptions options_;
  std::unique_ptr<Gemma4DrafterForward> drafter_;
  std::vector<SeqState> seqs_;
  DeviceBuffer pending_h_buf_;
  Mat pending_h_;  // [n_seq_max, n_embd]: target's final normed hidden of each pending token's row
  SpecStats stats_;
  DraftPolicy policy_;  // adaptive drafting: cost fits shared by every sequence
  std::vector<float> masked_logits_;
  std::vector<float> draft_logits_;  // draft_stepwise's downloaded drafter logits
};

}  // namespace gs
