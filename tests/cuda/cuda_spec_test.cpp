// Speculative decoding on the CUDA backend: greedy output with the MTP drafter equals plain
// greedy output token for token (draft_max 1..8, prompts on both sides of the sliding
// window), for the tiny random pair and the trained shakes pair.
#include <gtest/gtest.h>

#include <random>

#include "common/spec_rounds.h"
#include "cuda_test_util.h"
#include "model/golden_util.h"
#include "runtime/speculative.h"

namespace gs::test {
namespace {

SpecStats check_pair(const std::string& target, const std::string& assistant, const std::vector<int>& lengths, int n) {
  Backend& b = *Backends::get().fast;
  auto t = load_model(b, target);
  auto a = load_model(b, assistant);
  EXPECT_TRUE(t && a);
  if (!t || !a) return {};
  RunnerOptions o;
  o.max_tokens = 64;
  o.max_outputs = 16;
  o.kv.n_seq_max = 1;
  o.kv.n_ctx = 512;
  o.kv.page_size = 16;
  auto r = ModelRunner::create(t, o);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  SpecOptions so;
  so.draft_max = 8;
  auto dec = SpeculativeDecoder::create(**r, a, so);
  EXPECT_TRUE(dec.ok()) << dec.status().to_string();
  if (!r.ok() || !dec.ok()) return {};
  std::mt19937 rng(5);
  SpecStats all;
  for (int len : lengths) {
    std::vector<int32_t> prompt = {2};
    for (int i = 1; i < len; ++i) prompt.push_back(static_cast<int32_t>(5 + rng() % (t->config().n_vocab - 5)));
    const int s = (*r)->add_sequence().value();
    EXPECT_TRUE((*dec)->start(s).ok());
    Sampler greedy({});
    SeqWork pre;
    pre.seq = s;
    pre.sampler = &greedy;
    pre.prefill = prompt;
    EXPECT_TRUE((*dec)->step({&pre, 1}).ok());
    const auto snap = (*dec)->save(s).value();
    const std::vector<int32_t> ref = continue_greedy(**dec, s, snap, 0, n, nullptr);
    for (int dm = 1; dm <= 8; ++dm) {
      SpecStats st;
      EXPECT_EQ(continue_greedy(**dec, s, snap, dm, n, &st), ref) << "prompt of " << len << " tokens, draft_max " << dm;
      all.add(st);
    }
    EXPECT_TRUE((*r)->remove_sequence(s).ok());
  }
  std::printf("%s on CUDA: drafted %llu, accepted %llu (%.3f)\n", target.c_str(),
              static_cast<unsigned long long>(all.drafted), static_cast<unsigned long long>(all.accepted),
              all.acceptance_rate());
  return all;
}

TEST(CudaSpeculative, GreedyWithDrafterEqualsWithoutTinyPair) {
  GS_REQUIRE_BACKENDS();
  const SpecStats st = check_pair("golden/tiny1234-target.gguf", "golden/tiny1234-assistant.gguf", {1, 7, 9, 20}, 20);
  EXPECT_GT(st.drafted, 0u);
}

TEST(CudaSpeculative, GreedyWithDrafterEqualsWithoutShakesPair) {
  GS_REQUIRE_BACKENDS();
  const SpecStats st = check_pair("models/shakes-target.gguf", "models/shakes-assistant.gguf", {20, 150}, 24);
  EXPECT_GT(st.drafted, 0u);
}

}  // namespace
}  // namespace gs::test
