// The OpenAI response builders on their own (server/openai_format.h).
#include "server/openai_format.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server_fixture.h"

namespace gs::test {
namespace {

using nlohmann::json;

// A byte-fallback token (part of a character) is spelled "bytes:\xNN" in the legacy
// completions' logprobs, as OpenAI writes it: two such alternatives stay two keys of
// top_logprobs (as U+FFFD the second replaced the first, more probable one).
TEST(OpenAiFormat, CompletionLogprobsSpellPartialCharactersAsBytes) {
  const auto tok = shakes_tokenizer();
  ASSERT_TRUE(tok);
  const auto e2 = tok->find_token("<0xE2>"), x80 = tok->find_token("<0x80>"), x82 = tok->find_token("<0x82>");
  ASSERT_TRUE(e2 && x80 && x82);
  const int32_t la = tok->encode(" la", false, false).front();
  GeneratedToken g;
  g.id = *e2;
  g.logprob = -0.5f;
  g.top = {{*x80, -0.25f}, {*x82, -1.5f}, {la, -2.0f}};
  server::TextOffsets offsets;
  const json j = server::completion_logprobs_json(*tok, {server::ShownToken{g, -1, std::nullopt}}, offsets);
  EXPECT_EQ(j["tokens"][0], "bytes:\\xe2");
  const json& top = j["top_logprobs"][0];
  ASSERT_EQ(top.size(), 3u) << top.dump();
  EXPECT_EQ(top["bytes:\\x80"], -0.25);
  EXPECT_EQ(top["bytes:\\x82"], -1.5);
  EXPECT_EQ(top[" la"], -2.0);
}

// timings.prompt_per_second is the prefill's rate over the tokens it computed (llama-server's
// prompt_n): a 400-token prompt with 399 reused from the cache and 1 prefilled in 5 ms ran at
// 200 tok/s, not the 80000 that counting the cached ones gave.
TEST(OpenAiFormat, PromptRateCountsOnlyThePrefilledTokens) {
  Usage u;
  u.prompt_tokens = 400;
  u.cached_tokens = 399;
  u.prefill_ms = 5.0;
  u.completion_tokens = 11;
  u.decode_ms = 20.0;
  const json t = server::timings_json(u);
  EXPECT_EQ(t["prompt_n"], 1) << t.dump();
  EXPECT_DOUBLE_EQ(t["prompt_per_second"].get<double>(), 200.0) << t.dump();
  EXPECT_EQ(t["predicted_n"], 11) << t.dump();
  EXPECT_DOUBLE_EQ(t["predicted_per_second"].get<double>(), 500.0) << t.dump();
  u.cached_tokens = 0;
  EXPECT_DOUBLE_EQ(server::timings_json(u)["prompt_per_second"].get<double>(), 80000.0);
  // Nothing prefilled (no prefill time either): no rate.
  u.cached_tokens = 400;
  u.prefill_ms = 0;
  EXPECT_FALSE(server::timings_json(u).contains("prompt_per_second"));
}

}  // namespace
}  // namespace gs::test
