// Test drivers of SpeculativeDecoder rounds: a greedy continuation of one sequence, and
// rounds over several sequences in the same steps until each has its tokens.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/speculative.h"

namespace gs::test {

// Greedy continuation of length n from a snapshot (prompt processed, first token pending),
// rounds of up to draft_max drafts; each round is added to `stats` when it is given.
inline std::vector<int32_t> continue_greedy(SpeculativeDecoder& dec, int seq, const SpeculativeDecoder::Snapshot& snap,
                                            int draft_max, int n, SpecStats* stats) {
  EXPECT_TRUE(dec.restore(seq, snap).ok());
  Sampler greedy({});
  std::vector<int32_t> out = {snap.pending};
  while (static_cast<int>(out.size()) < n) {
    SeqWork w;
    w.seq = seq;
    w.sampler = &greedy;
    w.draft_max = draft_max;
    w.max_tokens = n - static_cast<int>(out.size());
    const Status st = dec.step({&w, 1});
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) break;
    out.insert(out.end(), w.tokens.begin(), w.tokens.end());
    if (stats) stats->add_round(w.n_drafted, w.n_accepted, static_cast<int>(w.tokens.size()));
  }
  return out;
}

// Steps every sequence seqs[i] (sampler samplers[i], draft_max[i]) whose out[i] holds fewer
// than n tokens, all in the same steps, appending each round's tokens to out[i], until all
// have n; on_round(i, work) sees each round of sequence i. A failing step fails the test
// and ends the rounds.
inline void decode_rounds(SpeculativeDecoder& dec, const std::vector<int>& seqs, std::vector<Sampler>& samplers,
                          const std::vector<int>& draft_max, int n, std::vector<std::vector<int32_t>>& out,
                          const std::function<void(size_t, const SeqWork&)>& on_round) {
  while (true) {
    std::vector<SeqWork> w;
    std::vector<size_t> who;
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (static_cast<int>(out[i].size()) >= n) continue;
      SeqWork x;
      x.seq = seqs[i];
      x.sampler = &samplers[i];
      x.draft_max = draft_max[i];
      x.max_tokens = n - static_cast<int>(out[i].size());
      w.push_back(x);
      who.push_back(i);
    }
    if (w.empty()) break;
    const Status st = dec.step(w);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) break;
    for (size_t j = 0; j < w.size(); ++j) {
      on_round(who[j], w[j]);
      out[who[j]].insert(out[who[j]].end(), w[j].tokens.begin(), w[j].tokens.end());
    }
  }
}

}  // namespace gs::test
