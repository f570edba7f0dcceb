// Exact acceptance of argmax drafts: sample each verified row, keep while it equals the draft.
#include "runtime/acceptance.h"

#include <algorithm>

namespace gs {

AcceptResult accept_drafts(std::span<const int32_t> drafts,
                           const std::function<std::span<const float>(int row)>& row_logits, Sampler& sampler,
                           int max_tokens, std::span<const int32_t> stop_tokens) {
  AcceptResult r;
  const int k = static_cast<int>(drafts.size());
  for (int i = 0; i <= k; ++i) {
    const int32_t t = sampler.sample(row_logits(i));
    if (!sampler.last_logits_ok()) {
      r.logits_ok = false;
      break;
    }
    sampler.accept(t);
    r.tokens.push_back(t);
    const bool matches = i < k && t == drafts[i];
    if (matches) ++r.n_accepted;
    const bool stop = std::find(stop_tokens.begin(), stop_tokens.end(), t) != stop_tokens.end();
    if (!matches || stop || static_cast<int>(r.tokens.size()) >= max_tokens) break;
  }
  return r;
}

}  // namespace gs
