// vLLM's token-level request fields (stop_token_ids, bad_words, allowed_token_ids). Before,
// all three were ignored: a vLLM client's stop_token_ids never stopped anything, and
// bad_words / allowed_token_ids asked for a constraint that silently did not hold.
// stop_token_ids now ends generation as vLLM does; the two constraints are refused by name.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "server/api_request.h"
#include "server/shakes_http.h"

namespace gs {
namespace {

using json = nlohmann::json;
using server::parse_chat_request;
using server::parse_completion_request;
using server::RequestDefaults;

Result<server::ChatCompletionRequest> chat(const std::string& extra, int32_t n_vocab = 100) {
  RequestDefaults d;
  d.n_vocab = n_vocab;
  return parse_chat_request(json::parse(R"({"messages":[{"role":"user","content":"hi"}],)" + extra + "}"), d);
}

Result<server::CompletionRequest> completion(const std::string& extra, int32_t n_vocab = 100) {
  RequestDefaults d;
  d.n_vocab = n_vocab;
  return parse_completion_request(json::parse(R"({"prompt":"x",)" + extra + "}"), d);
}

TEST(TokenFields, StopTokenIdsAreRead) {
  auto r = chat(R"("stop_token_ids":[5,7,5])");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->gen.stop_token_ids, (std::vector<int32_t>{5, 7}));
  auto c = completion(R"("stop_token_ids":[99])");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->gen.stop_token_ids, (std::vector<int32_t>{99}));
  for (const char* nothing : {R"("stop_token_ids":[])", R"("stop_token_ids":null)"}) {
    r = chat(nothing);
    ASSERT_TRUE(r.ok()) << nothing << ": " << r.status().to_string();
    EXPECT_TRUE(r->gen.stop_token_ids.empty()) << nothing;
  }
}

TEST(TokenFields, BadStopTokenIdsNameTheField) {
  const struct {
    const char* extra;
    const char* param;
  } cases[] = {
      {R"("stop_token_ids":5)", "stop_token_ids"},
      {R"("stop_token_ids":"5")", "stop_token_ids"},
      {R"("stop_token_ids":[1,"2"])", "stop_token_ids[1]"},
      {R"("stop_token_ids":[1.5])", "stop_token_ids[0]"},
      {R"("stop_token_ids":[-1])", "stop_token_ids[0]"},
      {R"("stop_token_ids":[1,100])", "stop_token_ids[1]"},
      {R"("stop_token_ids":[18446744073709551615])", "stop_token_ids[0]"},
      {R"("stop_token_ids":[true])", "stop_token_ids[0]"},
  };
  for (const auto& c : cases) {
    auto r = chat(c.extra);
    ASSERT_FALSE(r.ok()) << c.extra;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.extra;
    EXPECT_EQ(server::error_param(r.status().message()), c.param) << c.extra << ": " << r.status().message();
    EXPECT_FALSE(completion(c.extra).ok()) << c.extra;
  }
  std::string many = R"("stop_token_ids":[0)";
  for (int i = 1; i < 1000; ++i) many += "," + std::to_string(i % 10);
  EXPECT_TRUE(chat(many + "]", 100).ok());  // repeats are one id each
  std::string distinct = R"("stop_token_ids":[0)";
  for (int i = 1; i <= static_cast<int>(server::kMaxStopTokenIds); ++i) distinct += "," + std::to_string(i);
  auto r = chat(distinct + "]", 1000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(server::error_param(r.status().message()), "stop_token_ids");
}

TEST(TokenFields, TokenConstraintsAreRefusedByName) {
  for (const char* key : {"bad_words", "allowed_token_ids"}) {
    const std::string value = std::string(key) == "bad_words" ? R"(["thee"])" : "[1,2]";
    const std::string extra = "\"" + std::string(key) + "\":" + value;
    auto r = chat(extra);
    ASSERT_FALSE(r.ok()) << extra;
    EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << extra;
    EXPECT_EQ(server::error_param(r.status().message()), key) << r.status().message();
    EXPECT_EQ(completion(extra).status().code(), StatusCode::kUnimplemented) << extra;
    // Asking for nothing is accepted.
    for (const std::string nothing : {"[]", "null"}) {
      EXPECT_TRUE(chat("\"" + std::string(key) + "\":" + nothing).ok()) << key << " " << nothing;
    }
  }
}

// On the real engine: greedy output stops where a stop token id would come next, with
// finish_reason "stop", the stop token's text left out (as vLLM), streamed or not.
class ShakesStopTokenIds : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { server_.start(GetParam()); }
  void TearDown() override { server_.stop(); }
  test::ShakesHttp server_;
};

TEST_P(ShakesStopTokenIds, GenerationEndsBeforeTheToken) {
  const json base{{"prompt", "ROMEO:"}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}};
  auto r = server_.post(base, "/v1/completions");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string full = json::parse(r->body)["choices"][0]["text"].get<std::string>();
  const std::vector<int32_t> ids = server_.tokenizer().encode(full, /*add_special=*/false, /*parse_special=*/false);
  ASSERT_GE(ids.size(), 8u) << full;
  // A token of the greedy answer that first comes after a few others.
  size_t at = 4;
  while (at < ids.size() && std::find(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(at), ids[at]) !=
                                ids.begin() + static_cast<std::ptrdiff_t>(at))
    ++at;
  ASSERT_LT(at, ids.size()) << full;
  const Result<std::string> decoded =
      server_.tokenizer().decode(std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(at)));
  ASSERT_TRUE(decoded.ok());
  const std::string before = *decoded;
  ASSERT_EQ(full.rfind(before, 0), 0u) << "the answer's tokens do not re-encode as generated";

  for (const bool stream : {false, true}) {
    json body = base;
    body["stop_token_ids"] = {ids[at]};
    body["stream"] = stream;
    r = server_.post(body, "/v1/completions");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    std::string text;
    std::string finish;
    if (stream) {
      for (const json& c : test::sse_choice_chunks(r->body)) {
        text += c["choices"][0].value("text", "");
        if (c["choices"][0]["finish_reason"].is_string()) finish = c["choices"][0]["finish_reason"];
      }
    } else {
      const json j = json::parse(r->body);
      text = j["choices"][0]["text"];
      finish = j["choices"][0]["finish_reason"];
      EXPECT_EQ(j["usage"]["completion_tokens"], static_cast<int>(at) + 1) << r->body;
    }
    EXPECT_EQ(text, before) << "stream " << stream;
    EXPECT_EQ(finish, "stop") << "stream " << stream;
  }

  // Chat too; min_tokens holds the stop token back as it does the model's own.
  json chat_body{{"messages", json::array({{{"role", "user"}, {"content", "Speak."}}})},
                 {"max_tokens", 16},
                 {"temperature", 0},
                 {"reasoning_effort", "none"},
                 {"ignore_eos", true}};
  r = server_.post(chat_body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json first = json::parse(r->body);
  ASSERT_EQ(first["choices"][0]["finish_reason"], "length");
  const std::string answer = first["choices"][0]["message"]["content"];
  const std::vector<int32_t> answer_ids =
      server_.tokenizer().encode(answer, /*add_special=*/false, /*parse_special=*/false);
  ASSERT_FALSE(answer_ids.empty());
  chat_body["stop_token_ids"] = {answer_ids[0]};
  r = server_.post(chat_body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json stopped = json::parse(r->body);
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop") << r->body;
  EXPECT_EQ(stopped["choices"][0]["message"]["content"], "") << r->body;
  chat_body["min_tokens"] = 16;
  r = server_.post(chat_body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["usage"]["completion_tokens"], 16) << r->body;
}

INSTANTIATE_TEST_SUITE_P(Drafter, ShakesStopTokenIds, ::testing::Values(false, true),
                         [](const auto& param_info) { return param_info.param ? "DrafterOn" : "DrafterOff"; });

}  // namespace
}  // namespace gs
