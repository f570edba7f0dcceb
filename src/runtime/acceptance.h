// The acceptance rule of speculative decoding (spec Decision 3) as a pure function, so that
// the speculative decoder and the statistical tests run the very same code.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "runtime/sampler.h"

namespace gs {

struct AcceptResult {
  std::vector<int32_t> tokens;  // emitted: accepted drafts, then the correction or bonus token
  int n_accepted = 0;           // leading drafts that were emitted
  bool logits_ok = true;        // false: a row could not be sampled (Sampler::last_logits_ok); the round
                                // stopped before it, its token not emitted
};

// Row i (0..drafts.size()) of a verify pass holds the target's logits after the newest
// token and drafts[0..i-1]. Each row, in order, is sampled with `sampler` (its full chain,
// history updated with every emitted token); the sample is emitted; the round goes on
// while it equals the draft of that row. With argmax drafts this is exact speculative
// sampling at any temperature (Leviathan et al. 2023 with a one-hot draft distribution:
// accept d with probability p(d), else sample p restricted to tokens != d), and greedy
// matching at temperature 0. The round also ends after a stop token or max_tokens tokens.
AcceptResult accept_drafts(std::span<const int32_t> drafts,
                           const std::function<std::span<const float>(int row)>& row_logits, Sampler& sampler,
                           int max_tokens, std::span<const int32_t> stop_tokens);

}  // namespace gs
