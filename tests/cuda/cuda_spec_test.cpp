// Speculative decoding on the CUDA backend: greedy output with the MTP drafter equals plain
// greedy output token for token (draft_max 1..8, prompts on both sides of the sliding
// window), for the tiny random pair and the trained shakes pair (also with a context long
// enough for the 64-row attention kernel to take decode and verify).
#include <gtest/gtest.h>

#include <random>

#include "common/spec_rounds.h"
#include "cuda_test_util.h"
#include "model/golden_util.h"
#include "runtime/speculative.h"

namespace gs::test {
namespace {

SpecStats check_pair(const std::string& target, const std::string& assistant, const std::vector<int>& lengths, int n,
                     int n_ctx = 512, GgmlType kv_type = GgmlType::F16) {
  Backend& b = *Backends::get().fast;
  auto t = load_model(b, target);
  auto a = load_model(b, assistant);
  EXPECT_TRUE(t && a);
  if (!t || !a) return {};
  std::mt19937 rng(5);
  std::vector<std::vector<int32_t>> prompts;
  for (int len : lengths) {
    std::vector<int32_t> prompt = {2};
    for (int i = 1; i < len; ++i) prompt.push_back(static_cast<int32_t>(5 + rng() % (t->config().n_vocab - 5)));
    prompts.push_back(prompt);
  }
  const SpecStats all = check_drafts_keep_greedy(t, a, prompts, n, n_ctx, kv_type);
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

// With a context of 8192 the one-sequence batches (decode and verify) take the 64-row attention
// kernel on the full layers (decision 0020); verify rows must still reproduce decode rows.
TEST(CudaSpeculative, GreedyWithDrafterEqualsWithoutShakesPairLongContext) {
  GS_REQUIRE_BACKENDS();
  const SpecStats st =
      check_pair("models/shakes-target.gguf", "models/shakes-assistant.gguf", {20, 150}, 24, 8192);
  EXPECT_GT(st.drafted, 0u);
}

// A q8_0 cache (decision 0035), also over a long context (the 64-row kernel on the full layers).
TEST(CudaSpeculative, GreedyWithDrafterEqualsWithoutShakesPairQ8_0Cache) {
  GS_REQUIRE_BACKENDS();
  for (int n_ctx : {512, 8192}) {
    const SpecStats st = check_pair("models/shakes-target.gguf", "models/shakes-assistant.gguf", {20, 150}, 24, n_ctx,
                                    GgmlType::Q8_0);
    EXPECT_GT(st.drafted, 0u);
  }
}

}  // namespace
}  // namespace gs::test
