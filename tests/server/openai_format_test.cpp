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
  const json j = server::completion_logprobs_json(*tok, {g}, offsets);
  EXPECT_EQ(j["tokens"][0], "bytes:\\xe2");
  const json& top = j["top_logprobs"][0];
  ASSERT_EQ(top.size(), 3u) << top.dump();
  EXPECT_EQ(top["bytes:\\x80"], -0.25);
  EXPECT_EQ(top["bytes:\\x82"], -1.5);
  EXPECT_EQ(top[" la"], -2.0);
}

}  // namespace
}  // namespace gs::test
