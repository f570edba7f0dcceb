// Test drivers of SpeculativeDecoder rounds: greedy continuations of one sequence (and the
// check that drafting keeps them), and rounds over several sequences in the same steps.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/speculative.h"

namespace gs::test {

// Adds a sequence to dec's runner, starts it and prefills `prompt` in one step, the first
// token sampled with `sampler`. Returns the sequence, or the first error.
inline Result<int> start_with_prompt(SpeculativeDecoder& dec, std::span<const int32_t> prompt, Sampler& sampler) {
  GS_ASSIGN_OR_RETURN(const int s, dec.runner().add_sequence());
  GS_RETURN_IF_ERROR(dec.start(s));
  SeqWork pre;
  pre.seq = s;
  pre.sampler = &sampler;
  pre.prefill = prompt;
  GS_RETURN_IF_ERROR(dec.step({&pre, 1}));
  return s;
}

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

// For each prompt, on a one-sequence runner of `target` (n_ctx 512 unless given) and a
// decoder with `assistant`: prefills it greedily, then the greedy continuations of n tokens
// with draft_max 1..8 from that snapshot must equal the one without drafts. Returns the
// drafted rounds' counters.
inline SpecStats check_drafts_keep_greedy(std::shared_ptr<const Gemma4Model> target,
                                          std::shared_ptr<const Gemma4Model> assistant,
                                          const std::vector<std::vector<int32_t>>& prompts, int n,
                                          int n_ctx = 512, GgmlType kv_type = GgmlType::F16) {
  RunnerOptions o;
  o.max_tokens = 64;
  o.max_outputs = 16;
  o.kv.n_seq_max = 1;
  o.kv.n_ctx = n_ctx;
  o.kv.page_size = 16;
  o.kv.type = kv_type;
  auto r = ModelRunner::create(std::move(target), o);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok()) return {};
  SpecOptions so;
  so.draft_max = 8;
  auto dec = SpeculativeDecoder::create(**r, std::move(assistant), so);
  EXPECT_TRUE(dec.ok()) << dec.status().to_string();
  if (!dec.ok()) return {};
  SpecStats all;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Sampler greedy({});
    const Result<int> started = start_with_prompt(**dec, prompts[i], greedy);
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    if (!started.ok()) continue;
    const int s = *started;
    const auto snap = (*dec)->save(s).value();
    const std::vector<int32_t> ref = continue_greedy(**dec, s, snap, 0, n, nullptr);
    for (int dm = 1; dm <= 8; ++dm) {
      SpecStats round_stats;
      EXPECT_EQ(continue_greedy(**dec, s, snap, dm, n, &round_stats), ref)
          << "prompt " << i << " (" << prompts[i].size() << " tokens), draft_max " << dm;
      all.add(round_stats);
    }
    EXPECT_TRUE((*r)->remove_sequence(s).ok());
  }
  return all;
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
