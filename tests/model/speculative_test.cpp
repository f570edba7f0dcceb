// Speculative decoding with the MTP drafter: greedy output equals plain greedy token for
// token (many prompts, draft_max 1..8, both sides of the sliding window, several sequences
// at once); rollback leaves the cache as if the rejected tokens never ran; sampling keeps
// the output distribution (chi-square), and the same test rejects a wrong acceptance rule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "common/spec_rounds.h"
#include "golden_util.h"
#include "model/drafter.h"
#include "runtime/speculative.h"
#include "test_gguf.h"
#include "text/tokenizer.h"

namespace gs::test {
namespace {

struct Pair {
  std::unique_ptr<Backend> backend;
  std::shared_ptr<Gemma4Model> target;
  std::shared_ptr<Gemma4Model> assistant;
};

Pair tiny_pair() {
  Pair p;
  p.backend = create_cpu_backend(2);
  p.target = load_model(*p.backend, "golden/tiny1234-target.gguf");
  p.assistant = load_model(*p.backend, "golden/tiny1234-assistant.gguf");
  return p;
}

// The trained shakes target and drafter (shared/models).
Pair shakes_pair() {
  Pair p;
  p.backend = create_cpu_backend(2);
  p.target = load_model(*p.backend, "models/shakes-target.gguf");
  p.assistant = load_model(*p.backend, "models/shakes-assistant.gguf");
  return p;
}

std::unique_ptr<ModelRunner> runner_for(const Pair& p, int n_seq, int max_tokens = 32, int page_size = 4) {
  RunnerOptions o;
  o.max_tokens = max_tokens;
  o.max_outputs = 64;
  o.kv.n_seq_max = n_seq;
  o.kv.n_ctx = 256;
  o.kv.page_size = page_size;
  return ModelRunner::create(p.target, o).value();
}

// Generates n tokens for each prompt (one sequence each, all in the same steps) with the
// given per-sequence draft_max; returns the generated tokens of each sequence.
std::vector<std::vector<int32_t>> generate(SpeculativeDecoder& dec, const std::vector<std::vector<int32_t>>& prompts,
                                           const std::vector<int>& draft_max, int n, const SamplerConfig& sc,
                                           SpecStats* stats = nullptr) {
  ModelRunner& r = dec.runner();
  const size_t ns = prompts.size();
  std::vector<int> seqs;
  std::vector<Sampler> samplers;
  for (size_t i = 0; i < ns; ++i) {
    seqs.push_back(r.add_sequence().value());
    EXPECT_TRUE(dec.start(seqs.back()).ok());
    SamplerConfig c = sc;
    c.seed = sc.seed + i;
    samplers.emplace_back(c);
  }
  std::vector<std::vector<int32_t>> out(ns);
  std::vector<SeqWork> work(ns);
  for (size_t i = 0; i < ns; ++i) {
    work[i].seq = seqs[i];
    work[i].sampler = &samplers[i];
    work[i].prefill = prompts[i];
  }
  EXPECT_TRUE(dec.step(work).ok());
  for (size_t i = 0; i < ns; ++i) out[i] = work[i].tokens;
  decode_rounds(dec, seqs, samplers, draft_max, n, out, [](size_t, const SeqWork& w) {
    EXPECT_LE(w.n_accepted, w.n_drafted);
    EXPECT_GE(static_cast<int>(w.tokens.size()), 1);
  });
  for (size_t i = 0; i < ns; ++i) {
    if (stats) stats->add(dec.seq_stats(seqs[i]));
    EXPECT_TRUE(r.remove_sequence(seqs[i]).ok());
  }
  return out;
}

// For each prompt: greedy with draft_max 1..8 equals greedy without drafts.
SpecStats check_greedy_equality(const Pair& p, const std::vector<std::vector<int32_t>>& prompts, int n) {
  const SpecStats all = check_drafts_keep_greedy(p.target, p.assistant, prompts, n);
  // Counters by position: never more accepted than drafted, non-increasing drafts.
  for (size_t i = 0; i < all.drafted_by_pos.size(); ++i) {
    EXPECT_LE(all.accepted_by_pos[i], all.drafted_by_pos[i]);
    if (i > 0) {
      EXPECT_LE(all.drafted_by_pos[i], all.drafted_by_pos[i - 1]);
    }
  }
  std::printf("drafted %llu, accepted %llu (%.3f), %.2f tokens per round\n", static_cast<unsigned long long>(all.drafted),
              static_cast<unsigned long long>(all.accepted), all.acceptance_rate(), all.mean_tokens_per_round());
  return all;
}

TEST(Speculative, GreedyWithDrafterEqualsWithoutTinyPair) {
  Pair p = tiny_pair();
  std::mt19937 rng(3);
  const int n_vocab = p.target->config().n_vocab;
  // Prompt lengths on both sides of the window (W = 8).
  std::vector<std::vector<int32_t>> prompts;
  for (int len : {1, 7, 8, 9, 20}) {
    std::vector<int32_t> pr = {2};
    for (int i = 1; i < len; ++i) pr.push_back(static_cast<int32_t>(rng() % n_vocab));
    prompts.push_back(pr);
  }
  const SpecStats st = check_greedy_equality(p, prompts, 20);
  EXPECT_GT(st.drafted, 0u);  // the random pair rarely agrees: this exercises rejection
}

TEST(Speculative, GreedyWithDrafterEqualsWithoutTrainedPair) {
  Pair p = shakes_pair();
  // tinyshakespeare in the pair's own vocabulary: prompts shorter and longer than the
  // window (W = 128).
  std::ifstream in(shared_path("test-assets/corpora/tinyshakespeare.txt"));
  std::string text(20000, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  auto tok = text::Tokenizer::from_gguf(p.target->file());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::vector<int32_t> corpus = (*tok)->encode(text, false, false);
  ASSERT_GT(corpus.size(), 2200u);
  std::vector<std::vector<int32_t>> prompts;
  for (auto [begin, len] : {std::pair{0, 20}, std::pair{2000, 150}}) {
    std::vector<int32_t> pr = {2};
    pr.insert(pr.end(), corpus.begin() + begin, corpus.begin() + begin + len);
    prompts.push_back(pr);
  }
  const SpecStats st = check_greedy_equality(p, prompts, 20);
  EXPECT_GT(st.accepted, st.drafted / 10);  // the trained drafter is right often
}

// Adaptive drafting changes how many drafts each round proposes, never the output.
// A q8_0 KV cache (decision 0035): the drafter reads the target's quantized K and V, and
// greedy output with drafts still equals greedy output without (a verify row sees the same
// quantized rows as a decode step), with drafts still accepted.
TEST(Speculative, GreedyWithDrafterEqualsWithoutQ8_0Cache) {
  Pair p = shakes_pair();
  std::ifstream in(shared_path("test-assets/corpora/tinyshakespeare.txt"));
  std::string text(6000, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  auto tok = text::Tokenizer::from_gguf(p.target->file());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::vector<int32_t> corpus = (*tok)->encode(text, false, false);
  ASSERT_GT(corpus.size(), 1200u);
  std::vector<std::vector<int32_t>> prompts;
  for (auto [begin, len] : {std::pair{0, 20}, std::pair{1000, 150}}) {
    std::vector<int32_t> pr = {2};
    pr.insert(pr.end(), corpus.begin() + begin, corpus.begin() + begin + len);
    prompts.push_back(pr);
  }
  const SpecStats st = check_drafts_keep_greedy(p.target, p.assistant, prompts, 20, 512, GgmlType::Q8_0);
  EXPECT_GT(st.accepted, st.drafted / 10);
}

TEST(Speculative, AdaptiveDraftingKeepsGreedyOutput) {
  Pair p = shakes_pair();
  auto tok = text::Tokenizer::from_gguf(p.target->file());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::vector<std::vector<int32_t>> prompts = {(*tok)->encode("ROMEO:", true, false),
                                                     (*tok)->encode("KING HENRY:", true, false)};
  auto plain_runner = runner_for(p, 2, 32, 16);
  auto plain = SpeculativeDecoder::create(*plain_runner, nullptr, {}).value();
  const auto ref = generate(*plain, prompts, {0, 0}, 80, {});
  auto r = runner_for(p, 2, 32, 16);
  SpecOptions o;
  o.draft_max = 4;
  o.adaptive = true;
  auto dec = SpeculativeDecoder::create(*r, p.assistant, o).value();
  SpecStats stats;
  const auto got = generate(*dec, prompts, {4, 4}, 80, {}, &stats);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], ref[i]) << "sequence " << i;
  EXPECT_GT(dec->stats().drafted, 0u);  // the warm-up rounds draft
}

TEST(Speculative, MixedSequencesInOneStep) {
  Pair p = tiny_pair();
  const Goldens g = load_goldens();
  std::vector<std::vector<int32_t>> prompts = {{g.greedy.begin(), g.greedy.begin() + 12}, {2, 50, 60},
                                               {g.seq.begin(), g.seq.begin() + 20}, {2}};
  auto plain_runner = runner_for(p, 4);
  auto plain = SpeculativeDecoder::create(*plain_runner, nullptr, {}).value();
  const auto ref = generate(*plain, prompts, {0, 0, 0, 0}, 30, {});
  // Some sequences draft, some decode plainly, with different draft lengths, in the same
  // steps: each must give what it gives alone without drafts.
  auto r = runner_for(p, 4);
  SpecOptions o;
  o.draft_max = 5;
  auto dec = SpeculativeDecoder::create(*r, p.assistant, o).value();
  const auto got = generate(*dec, prompts, {3, 0, 5, 1}, 30, {});
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], ref[i]) << "sequence " << i;
}

// Reads the K/V rows of positions [0, n) of one sequence, every layer, as bytes.
std::vector<uint8_t> cache_bytes(ModelRunner& r, int seq, int32_t n) {
  const KvCacheBinding& b = r.kv().binding();
  std::vector<uint8_t> out;
  for (size_t il = 0; il < b.layers.size(); ++il) {
    const KvLayerView& l = b.layers[il];
    const bool sliding = r.config().layers[il].sliding;
    const size_t row = static_cast<size_t>(l.n_head_kv) * l.head_dim * (l.type == GgmlType::F16 ? 2 : 4);
    const int32_t lo = sliding ? std::max(0, n - r.kv().swa_ring() + 1) : 0;
    for (int32_t pos = lo; pos < n; ++pos) {
      const int64_t slot = kv_slot(sliding ? b.swa_pages_host : b.full_pages_host, seq, pos);
      EXPECT_GE(slot, 0);
      for (const void* pool : {l.k, l.v}) {
        const auto* src = static_cast<const uint8_t*>(pool) + slot * row;
        out.insert(out.end(), src, src + row);
      }
    }
  }
  return out;
}

TEST(Speculative, RollbackLeavesTheCacheAsIfRejectedTokensNeverRan) {
  Pair p = tiny_pair();
  const Goldens g = load_goldens();
  const std::vector<int32_t> prompt(g.seq.begin(), g.seq.begin() + 10);
  auto r = runner_for(p, 2);
  SpecOptions o;
  o.draft_max = 6;
  auto dec = SpeculativeDecoder::create(*r, p.assistant, o).value();
  Sampler sampler({});
  const Result<int> started = start_with_prompt(*dec, prompt, sampler);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  const int s = *started;
  std::vector<int32_t> all = prompt;
  int rejected_rounds = 0;
  for (int round = 0; round < 12; ++round) {
    SeqWork w;
    w.seq = s;
    w.sampler = &sampler;
    w.draft_max = 6;
    const int32_t pending = dec->pending_token(s);
    ASSERT_TRUE(dec->step({&w, 1}).ok());
    all.push_back(pending);
    all.insert(all.end(), w.tokens.begin(), w.tokens.end() - 1);
    rejected_rounds += w.n_accepted < w.n_drafted;
    ASSERT_EQ(r->length(s), static_cast<int32_t>(all.size()));
  }
  EXPECT_GT(rejected_rounds, 0);
  // The same tokens, decoded one by one in a fresh cache.
  auto r2 = runner_for(p, 2);
  const int s2 = r2->add_sequence().value();
  for (int32_t t : all) {
    ModelRunner::Token tok{s2, t, false};
    ASSERT_TRUE(r2->decode({&tok, 1}).ok());
  }
  EXPECT_EQ(cache_bytes(*r, s, r->length(s)), cache_bytes(*r2, s2, r2->length(s2)));
}

// --- distribution: chi-square homogeneity of the next two tokens ---------------------
// The statistics of the acceptance rule itself (frequent acceptance, wrong rules failing
// the same test) are in tests/runtime/acceptance_test.cpp; this checks the whole path
// (drafter, batched verify, rollback, pending state) at temperature > 0 on the models.

using PairCounts = std::map<std::pair<int32_t, int32_t>, int>;

// Pearson chi-square homogeneity statistic of two samples; categories with an expected
// count below 5 are pooled. Returns {statistic, degrees of freedom}.
std::pair<double, int> chi_square(const PairCounts& a, const PairCounts& b, int na, int nb) {
  std::map<std::pair<int32_t, int32_t>, std::pair<double, double>> cells;
  for (auto& [k, v] : a) cells[k].first += v;
  for (auto& [k, v] : b) cells[k].second += v;
  const double n = na + nb;
  std::vector<std::pair<double, double>> kept;
  std::pair<double, double> pooled{0, 0};
  for (auto& [k, v] : cells) {
    if ((v.first + v.second) * std::min(na, nb) / n < 5) {
      pooled.first += v.first;
      pooled.second += v.second;
    } else {
      kept.push_back(v);
    }
  }
  if (pooled.first + pooled.second > 0) kept.push_back(pooled);
  double chi2 = 0;
  for (auto& [x, y] : kept) {
    const double total = x + y, ea = total * na / n, eb = total * nb / n;
    chi2 += (x - ea) * (x - ea) / ea + (y - eb) * (y - eb) / eb;
  }
  return {chi2, static_cast<int>(kept.size()) - 1};
}

// Upper 0.001 critical value of chi-square with k degrees of freedom (Wilson-Hilferty).
double chi2_critical_001(int k) {
  const double z = 3.090232;
  const double t = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * t * t * t;
}

// n samples of the two tokens after a fixed prompt and pending token, each from a fresh
// seed: plain (draft_max 0) or speculative.
PairCounts sample_next_two(SpeculativeDecoder& dec, int seq, const SpeculativeDecoder::Snapshot& snap,
                           const SamplerConfig& sc, int draft_max, int n, uint64_t seed0) {
  PairCounts counts;
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(dec.restore(seq, snap).ok());
    SamplerConfig c = sc;
    c.seed = seed0 + static_cast<uint64_t>(i);
    Sampler sampler(c);
    std::vector<int32_t> got;
    while (got.size() < 2) {
      SeqWork w;
      w.seq = seq;
      w.sampler = &sampler;
      w.draft_max = draft_max;
      w.max_tokens = 2 - static_cast<int>(got.size());
      EXPECT_TRUE(dec.step({&w, 1}).ok());
      got.insert(got.end(), w.tokens.begin(), w.tokens.end());
    }
    ++counts[{got[0], got[1]}];
  }
  return counts;
}

TEST(SpecDistribution, NextTwoTokensKeepTheirDistribution) {
  Pair p = tiny_pair();
  const Goldens g = load_goldens();
  auto r = runner_for(p, 1);
  SpecOptions o;
  o.draft_max = 3;
  auto dec = SpeculativeDecoder::create(*r, p.assistant, o).value();
  SamplerConfig sc;
  sc.temperature = 1.0f;
  sc.top_k = 4;
  Sampler greedy({});
  const std::vector<int32_t> prompt(g.greedy.begin(), g.greedy.begin() + 12);
  const Result<int> started = start_with_prompt(*dec, prompt, greedy);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  const int s = *started;
  const auto snap = dec->save(s).value();
  const int n = 1500;
  const PairCounts plain = sample_next_two(*dec, s, snap, sc, 0, n, 1000000);
  const PairCounts spec = sample_next_two(*dec, s, snap, sc, 3, n, 2000000);
  const auto [chi2, dof] = chi_square(plain, spec, n, n);
  std::printf("with vs without speculation: chi2 %.2f, %d dof, critical(0.001) %.2f, %zu pairs seen\n", chi2, dof,
              chi2_critical_001(dof), plain.size());
  ASSERT_GE(dof, 3) << "the test needs a spread distribution";
  EXPECT_LT(chi2, chi2_critical_001(dof));
}

TEST(Speculative, MismatchedDrafterIsAClearErrorNotACrash) {
  auto backend = create_cpu_backend(1);
  auto shakes = load_model(*backend, "models/shakes-target.gguf");
  auto tiny_assistant = load_model(*backend, "golden/tiny1234-assistant.gguf");
  RunnerOptions o;
  o.max_tokens = 16;
  o.kv.n_ctx = 64;
  auto r = ModelRunner::create(shakes, o).value();
  auto dec = SpeculativeDecoder::create(*r, tiny_assistant, {});
  ASSERT_FALSE(dec.ok());
  EXPECT_NE(dec.status().message().find("mismatch"), std::string::npos) << dec.status().message();
  // A drafter file with a tensor cut off: the load names it.
  EditableGguf e = EditableGguf::from(tiny_assistant->file());
  e.remove_tensor("nextn.post_projection.weight");
  const auto dir = temp_dir("drafter");
  ASSERT_TRUE(e.write((dir / "a.gguf").string()).ok());
  auto broken = Gemma4Model::load((dir / "a.gguf").string(), *backend);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("nextn.post_projection.weight"), std::string::npos);
  std::filesystem::remove_all(dir);
}


// A decoder with the drafter after a prefill step of `prompts` (one sequence each, greedy
// samplers): the state both tests below start their rounds from.
struct Started {
  std::unique_ptr<ModelRunner> runner;
  std::unique_ptr<SpeculativeDecoder> dec;
  std::vector<int> seqs;
  std::vector<Sampler> samplers;
};
Started start_after_prompts(const Pair& p, const std::vector<std::vector<int32_t>>& prompts, const SpecOptions& o,
                            int page_size) {
  Started st;
  const int n = static_cast<int>(prompts.size());
  st.runner = runner_for(p, n, 32, page_size);
  st.dec = SpeculativeDecoder::create(*st.runner, p.assistant, o).value();
  st.samplers.assign(prompts.size(), Sampler(SamplerConfig{}));
  std::vector<SeqWork> work(prompts.size());
  for (int i = 0; i < n; ++i) {
    st.seqs.push_back(st.runner->add_sequence().value());
    EXPECT_TRUE(st.dec->start(st.seqs[i]).ok());
    work[i].seq = st.seqs[i];
    work[i].sampler = &st.samplers[i];
    work[i].prefill = prompts[i];
  }
  EXPECT_TRUE(st.dec->step(work).ok());
  return st;
}

// draft_p_min: a row keeps its drafts up to the first whose drafter probability is below the
// threshold (that one and every later one dropped), and at most its own limit, in a batch of
// rows with different limits; the kept drafts are the chain's picks in order (what the
// target accepts of them is the greedy continuation's matching prefix).
TEST(Speculative, DraftPMinEndsARowsDraftsAtTheFirstUnlikelyOne) {
  Pair p = shakes_pair();
  auto tok = text::Tokenizer::from_gguf(p.target->file());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::vector<std::vector<int32_t>> prompts = {(*tok)->encode("ROMEO:\nBut soft", true, false),
                                                     (*tok)->encode("KING HENRY:", true, false)};
  const std::vector<int> limit = {8, 3};
  constexpr int kSteps = 8;
  // The greedy continuation of each prompt: token 0 is the pending one, drafts guess 1, 2, ...
  auto plain_runner = runner_for(p, 2, 32, 16);
  auto plain = SpeculativeDecoder::create(*plain_runner, nullptr, {}).value();
  const auto greedy = generate(*plain, prompts, {0, 0}, kSteps + 2, {});

  // One decoder after the prompts: its state before the first round, and its drafter's chain
  // of picks and probabilities from there (the drafts the round would propose).
  auto start = [&](float p_min) {
    SpecOptions o;
    o.draft_max = kSteps;
    o.draft_p_min = p_min;
    return start_after_prompts(p, prompts, o, 16);
  };
  Started ref = start(0.0f);
  auto chain = Gemma4DrafterForward::create(p.assistant, p.target, 2, DraftSlidingWindow::kWindow, kSteps).value();
  std::vector<int32_t> toks, pos, rows;
  for (int i = 0; i < 2; ++i) {
    const SpeculativeDecoder::Snapshot snap = ref.dec->save(ref.seqs[i]).value();
    ASSERT_EQ(snap.pending, greedy[i][0]);
    ASSERT_TRUE(p.backend->upload(chain->h_in().row(i), snap.hidden.data(), snap.hidden.size() * sizeof(float)).ok());
    toks.push_back(snap.pending);
    pos.push_back(snap.length);
    rows.push_back(ref.seqs[i]);
  }
  ASSERT_TRUE(chain->run_chain({toks, pos, rows}, ref.runner->kv().binding(), kSteps).ok());
  std::vector<int32_t> ids(static_cast<size_t>(kSteps) * 2);
  std::vector<float> pr(ids.size());
  ASSERT_TRUE(p.backend->download(ids.data(), chain->draft_ids(), ids.size() * sizeof(int32_t)).ok());
  ASSERT_TRUE(p.backend->download(pr.data(), chain->draft_p(), pr.size() * sizeof(float)).ok());

  // Thresholds at and just above every probability of the chain, and 0 (no threshold).
  std::vector<float> thresholds = {0.0f};
  for (float v : pr) {
    if (v > 0.0f && v < 1.0f) {
      thresholds.push_back(v);
      thresholds.push_back(std::nextafter(v, 1.0f));
    }
  }
  int cut_short = 0;
  for (float t : thresholds) {
    Started st = start(t);
    std::vector<SeqWork> work(2);
    for (int i = 0; i < 2; ++i) {
      work[i].seq = st.seqs[i];
      work[i].sampler = &st.samplers[i];
      work[i].draft_max = limit[i];
    }
    ASSERT_TRUE(st.dec->step(work).ok());
    for (int i = 0; i < 2; ++i) {
      int kept = 0;
      while (kept < limit[i] && (t <= 0.0f || pr[static_cast<size_t>(kept) * 2 + i] >= t)) ++kept;
      int accepted = 0;
      while (accepted < kept && ids[static_cast<size_t>(accepted) * 2 + i] == greedy[i][accepted + 1]) ++accepted;
      EXPECT_EQ(work[i].n_drafted, kept) << "row " << i << ", draft_p_min " << t;
      EXPECT_EQ(work[i].n_accepted, accepted) << "row " << i << ", draft_p_min " << t;
      ASSERT_GE(work[i].tokens.size(), 1u);
      for (size_t m = 0; m < work[i].tokens.size(); ++m) EXPECT_EQ(work[i].tokens[m], greedy[i][m + 1]);
      cut_short += kept < limit[i] ? 1 : 0;
    }
  }
  EXPECT_GT(cut_short, 0);  // some thresholds end a row's drafts early
}

// Drafting under an output constraint (SeqWork::allowed_after, one draft step at a time with
// the picks made on the host) proposes the drafts of the device chain when the constraint
// allows every token: every step of a round at the round's position P (spec §4.3), never
// one further per step. A stepwise path that moved the position read key positions the
// target had not written, and past the last allocated page it aborted the server (a
// recursive json_schema with the drafter and a cached prefix, twenty-first session).
// Small pages (4 positions) put a page boundary inside most rounds' draft range.
TEST(Speculative, ConstrainedDraftingProposesTheChainsDrafts) {
  Pair p = shakes_pair();
  auto tok = text::Tokenizer::from_gguf(p.target->file());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::vector<std::vector<int32_t>> prompts = {(*tok)->encode("ROMEO:\nBut soft", true, false),
                                                     (*tok)->encode("KING HENRY:", true, false)};
  SpecOptions o;
  o.draft_max = 6;
  Started chain = start_after_prompts(p, prompts, o, 4), stepwise = start_after_prompts(p, prompts, o, 4);
  const auto free_all = [](std::span<const int32_t>) { return std::span<const int32_t>(); };
  int drafted = 0, accepted = 0;
  for (int round = 0; round < 12; ++round) {
    std::vector<SeqWork> a(2), b(2);
    for (int i = 0; i < 2; ++i) {
      a[i].seq = chain.seqs[i];
      a[i].sampler = &chain.samplers[i];
      a[i].draft_max = 6;
      b[i].seq = stepwise.seqs[i];
      b[i].sampler = &stepwise.samplers[i];
      b[i].draft_max = 6;
      b[i].allowed_after = free_all;
    }
    ASSERT_TRUE(chain.dec->step(a).ok());
    ASSERT_TRUE(stepwise.dec->step(b).ok());
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(b[i].tokens, a[i].tokens) << "round " << round << ", row " << i;
      EXPECT_EQ(b[i].n_drafted, a[i].n_drafted) << "round " << round << ", row " << i;
      EXPECT_EQ(b[i].n_accepted, a[i].n_accepted) << "round " << round << ", row " << i;
      drafted += a[i].n_drafted;
      accepted += a[i].n_accepted;
    }
  }
  EXPECT_GT(drafted, 0);
  EXPECT_GT(accepted, 0);  // the trained drafter's drafts are accepted, so they were compared
}

}  // namespace
}  // namespace gs::test
