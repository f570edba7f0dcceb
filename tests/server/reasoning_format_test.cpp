// reasoning_format (llama-server's; decision 0034): the request field and the server's
// default, and where a chat completion's thinking goes in each format, whole and streamed,
// with tool calls, n choices and response_format; the Messages and Responses routes keep
// their own reasoning blocks whatever the server's default.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/api_request.h"
#include "server/request_plan.h"
#include "server/responses_request.h"
#include "server_fixture.h"

namespace gs::server {
namespace {

using nlohmann::json;
using test::LiveServer;
using test::ServerFixtureOptions;

const json kWeatherTool = json::parse(R"({"type":"function","function":{"name":"get_weather",
  "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}})");

constexpr const char* kThought = "The capital of France is Paris.";
const std::string kAnswerText = std::string("<|channel>thought\n") + kThought + "<channel|>Paris.";

json chat_body(json extra = json::object()) {
  json body{{"messages", json::array({{{"role", "user"}, {"content", "What is the capital of France?"}}})},
            {"max_tokens", 200}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

// ---- the field --------------------------------------------------------------------------

TEST(ReasoningFormat, NamesAndAuto) {
  EXPECT_EQ(parse_reasoning_format("deepseek"), ReasoningFormat::kDeepseek);
  EXPECT_EQ(parse_reasoning_format("none"), ReasoningFormat::kNone);
  EXPECT_EQ(parse_reasoning_format("deepseek-legacy"), ReasoningFormat::kDeepseekLegacy);
  EXPECT_EQ(parse_reasoning_format("auto"), ReasoningFormat::kDeepseek) << "Gemma 4's thinking has its own markup";
  for (const char* bad : {"", "DeepSeek", "NONE", "deepseek_legacy", "raw", "auto ", "hidden"}) {
    EXPECT_FALSE(parse_reasoning_format(bad).has_value()) << bad;
  }
}

Result<ChatCompletionRequest> parse_with(const json& extra, ReasoningFormat server_default) {
  RequestDefaults d;
  d.reasoning_format = server_default;
  json body{{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return parse_chat_request(body, d);
}

TEST(ReasoningFormat, FieldOverridesTheServerDefault) {
  for (const ReasoningFormat server_default :
       {ReasoningFormat::kDeepseek, ReasoningFormat::kNone, ReasoningFormat::kDeepseekLegacy}) {
    auto absent = parse_with(json::object(), server_default);
    ASSERT_TRUE(absent.ok()) << absent.status().to_string();
    EXPECT_EQ(absent->reasoning_format, server_default);
    auto null = parse_with({{"reasoning_format", nullptr}}, server_default);
    ASSERT_TRUE(null.ok()) << null.status().to_string();
    EXPECT_EQ(null->reasoning_format, server_default);
    const std::map<std::string, ReasoningFormat> given = {{"none", ReasoningFormat::kNone},
                                                          {"deepseek", ReasoningFormat::kDeepseek},
                                                          {"deepseek-legacy", ReasoningFormat::kDeepseekLegacy},
                                                          {"auto", ReasoningFormat::kDeepseek}};
    for (const auto& [name, want] : given) {
      auto r = parse_with({{"reasoning_format", name}}, server_default);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_EQ(r->reasoning_format, want) << name;
    }
  }
}

TEST(ReasoningFormat, BadValuesAreRefusedNamingTheField) {
  for (const json& bad : {json("bogus"), json(""), json("None"), json(1), json(true), json::object(),
                          json::array({"none"})}) {
    auto r = parse_with({{"reasoning_format", bad}}, ReasoningFormat::kDeepseek);
    ASSERT_FALSE(r.ok()) << bad.dump();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad.dump();
    EXPECT_EQ(error_param(r.status().message()), "reasoning_format") << r.status().message();
  }
  auto r = parse_with({{"reasoning_format", "bogus"}}, ReasoningFormat::kDeepseek);
  EXPECT_NE(r.status().message().find("'none', 'deepseek', 'deepseek-legacy' or 'auto'"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("bogus"), std::string::npos) << r.status().message();
}

TEST(ReasoningFormat, PlanSetsWhereTheThinkingGoes) {
  auto tok = test::shakes_tokenizer();
  struct Case {
    const char* name;
    bool in_content;
    bool reasoning_content;
  };
  for (const Case& c : {Case{"deepseek", false, true}, Case{"none", true, false}, Case{"deepseek-legacy", true, true},
                        Case{"auto", false, true}}) {
    auto req = parse_with({{"reasoning_format", c.name}}, ReasoningFormat::kDeepseek);
    ASSERT_TRUE(req.ok()) << req.status().to_string();
    auto plan = plan_chat(*req, *tok, PlanLimits{});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    EXPECT_TRUE(plan->parser.parse_reasoning) << c.name;
    EXPECT_EQ(plan->parser.reasoning_in_content, c.in_content) << c.name;
    EXPECT_EQ(plan->reasoning_content, c.reasoning_content) << c.name;
  }
}

// The Responses API answers with reasoning items: the server's default does not reach it.
TEST(ReasoningFormat, ResponsesRequestsKeepTheirReasoningItems) {
  RequestDefaults d;
  d.reasoning_format = ReasoningFormat::kNone;
  auto r = parse_responses_request(json{{"input", "hi"}}, d);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->chat.reasoning_format, ReasoningFormat::kDeepseek);
  // Nor is the chat field read from a Responses body (it is no Responses field).
  auto given = parse_responses_request(json{{"input", "hi"}, {"reasoning_format", "none"}}, d);
  ASSERT_TRUE(given.ok()) << given.status().to_string();
  EXPECT_EQ(given->chat.reasoning_format, ReasoningFormat::kDeepseek);
}

// A client that sends a none or deepseek-legacy answer back in its history sends the same
// prompt as one that sends the answer alone: the template drops the model's earlier thoughts.
TEST(ReasoningFormat, AnswersWithTheirBlocksReplayAsTheAnswerAlone) {
  const auto rendered = [](const std::string& earlier_answer) {
    json body{{"messages", json::array({{{"role", "user"}, {"content", "Capital of France?"}},
                                        {{"role", "assistant"}, {"content", earlier_answer}},
                                        {{"role", "user"}, {"content", "And of Spain?"}}})}};
    auto req = parse_chat_request(body, RequestDefaults{});
    EXPECT_TRUE(req.ok()) << req.status().to_string();
    auto prompt = render_chat_request(*req);
    EXPECT_TRUE(prompt.ok()) << prompt.status().to_string();
    return prompt.ok() ? prompt->text : std::string();
  };
  EXPECT_EQ(rendered(kAnswerText), rendered("Paris."));
}

// ---- over HTTP ----------------------------------------------------------------------------

// One choice's streamed message: the concatenated deltas.
struct StreamedChoice {
  std::string content;
  std::optional<std::string> reasoning;  // set once a reasoning_content delta came
  std::string finish;
  struct Call {
    std::string id, name, args;
  };
  std::map<int, Call> calls;
};

struct Streamed {
  std::map<int, StreamedChoice> choices;
  json usage;
};

Streamed stream_chat(const LiveServer& s, json body) {
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto r = s.post("/v1/chat/completions", body.dump());
  Streamed out;
  EXPECT_TRUE(r);
  if (!r) return out;
  EXPECT_EQ(r->status, 200) << r->body;
  for (const auto& e : test::sse_payloads(r->body)) {
    if (e == "[DONE]") continue;
    const json c = json::parse(e);
    if (c.contains("usage") && !c["usage"].is_null()) out.usage = c["usage"];
    if (c["choices"].empty()) continue;
    const json& ch = c["choices"][0];
    StreamedChoice& sc = out.choices[ch["index"].get<int>()];
    const json& d = ch["delta"];
    if (d.contains("content") && d["content"].is_string()) sc.content += d["content"].get<std::string>();
    if (d.contains("reasoning_content")) sc.reasoning = sc.reasoning.value_or("") + d["reasoning_content"].get<std::string>();
    for (const auto& tc : d.value("tool_calls", json::array())) {
      StreamedChoice::Call& call = sc.calls[tc["index"].get<int>()];
      if (tc.contains("id")) call.id = tc["id"];
      if (tc["function"].contains("name")) call.name += tc["function"]["name"].get<std::string>();
      if (tc["function"].contains("arguments")) call.args += tc["function"]["arguments"].get<std::string>();
    }
    if (!ch["finish_reason"].is_null()) sc.finish = ch["finish_reason"];
  }
  return out;
}

json whole_chat(const LiveServer& s, const json& body) {
  auto r = s.post("/v1/chat/completions", body.dump());
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, 200) << r->body;
  return json::parse(r->body);
}

// The streamed deltas of every choice assemble the whole response's message, and both the
// usage.
void expect_stream_matches_whole(const json& whole, const Streamed& st, const std::string& what) {
  ASSERT_EQ(st.choices.size(), whole["choices"].size()) << what;
  for (const json& c : whole["choices"]) {
    const int index = c["index"];
    const json& msg = c["message"];
    const StreamedChoice& sc = st.choices.at(index);
    EXPECT_EQ(sc.content, msg["content"].is_string() ? msg["content"].get<std::string>() : "") << what;
    EXPECT_EQ(sc.reasoning.has_value(), msg.contains("reasoning_content")) << what;
    if (msg.contains("reasoning_content") && sc.reasoning) {
      EXPECT_EQ(*sc.reasoning, msg["reasoning_content"]) << what;
    }
    EXPECT_EQ(sc.finish, c["finish_reason"]) << what;
    const json calls = msg.value("tool_calls", json::array());
    ASSERT_EQ(sc.calls.size(), calls.size()) << what;
    for (size_t k = 0; k < calls.size(); ++k) {
      const StreamedChoice::Call& call = sc.calls.at(static_cast<int>(k));
      EXPECT_EQ(call.name, calls[k]["function"]["name"]) << what;
      EXPECT_EQ(call.args, calls[k]["function"]["arguments"]) << what;
    }
  }
  EXPECT_EQ(st.usage["completion_tokens"], whole["usage"]["completion_tokens"]) << what;
  EXPECT_EQ(st.usage["completion_tokens_details"], whole["usage"]["completion_tokens_details"]) << what;
}

TEST(ReasoningFormatHttp, EachFormatWholeAndStreamed) {
  LiveServer s;
  s.answer(kAnswerText);
  json usage;
  for (const char* format : {"deepseek", "none", "deepseek-legacy", "auto"}) {
    const json body = chat_body({{"reasoning_format", format}});
    const json whole = whole_chat(s, body);
    const json& msg = whole["choices"][0]["message"];
    const std::string f = format;
    if (f == "deepseek" || f == "auto") {
      EXPECT_EQ(msg["content"], "Paris.") << f;
      EXPECT_EQ(msg["reasoning_content"], kThought) << f;
    } else if (f == "none") {
      EXPECT_EQ(msg["content"], kAnswerText) << f;
      EXPECT_FALSE(msg.contains("reasoning_content")) << whole.dump();
    } else {
      EXPECT_EQ(msg["content"], kAnswerText) << f;
      EXPECT_EQ(msg["reasoning_content"], kThought) << f;
    }
    EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
    // The usage is the same in every format: the same tokens were generated.
    if (usage.is_null()) usage = whole["usage"];
    EXPECT_EQ(whole["usage"]["completion_tokens"], usage["completion_tokens"]) << f;
    EXPECT_EQ(whole["usage"]["completion_tokens_details"], usage["completion_tokens_details"]) << f;
    EXPECT_GT(whole["usage"]["completion_tokens_details"]["reasoning_tokens"].get<int>(), 0) << f;
    expect_stream_matches_whole(whole, stream_chat(s, body), f);
  }
}

// A thought cut by max_tokens: none shows it as far as it went, without a closer.
TEST(ReasoningFormatHttp, CutThoughtHasNoCloser) {
  LiveServer s;
  s.answer(kAnswerText);
  const json body = chat_body({{"reasoning_format", "none"}, {"max_tokens", 5}});
  const json whole = whole_chat(s, body);
  const std::string content = whole["choices"][0]["message"]["content"];
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(content.rfind("<|channel>thought\n", 0), 0u) << content;
  EXPECT_EQ(content.find("<channel|>"), std::string::npos) << content;
  expect_stream_matches_whole(whole, stream_chat(s, body), "cut");
}

TEST(ReasoningFormatHttp, ToolCallsAreParsedInEveryFormat) {
  LiveServer s;
  s.answer("<|channel>thought\nI need the weather.<channel|><|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}"
           "<tool_call|>");
  for (const char* format : {"deepseek", "none", "deepseek-legacy"}) {
    const std::string f = format;
    const json body = chat_body({{"reasoning_format", format}, {"tools", json::array({kWeatherTool})}});
    const json whole = whole_chat(s, body);
    const json& c = whole["choices"][0];
    EXPECT_EQ(c["finish_reason"], "tool_calls") << f;
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << whole.dump();
    EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(json::parse(c["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
              json({{"city", "Paris"}}));
    if (f == "deepseek") {
      EXPECT_TRUE(c["message"]["content"].is_null()) << whole.dump();
    } else {
      EXPECT_EQ(c["message"]["content"], "<|channel>thought\nI need the weather.<channel|>") << f;
    }
    EXPECT_EQ(c["message"].contains("reasoning_content"), f != "none") << whole.dump();
    expect_stream_matches_whole(whole, stream_chat(s, body), f);
  }
}

TEST(ReasoningFormatHttp, EveryChoiceOfN) {
  LiveServer s;
  s.answer(kAnswerText);
  for (const char* format : {"none", "deepseek-legacy"}) {
    const json body = chat_body({{"reasoning_format", format}, {"n", 3}});
    const json whole = whole_chat(s, body);
    ASSERT_EQ(whole["choices"].size(), 3u) << whole.dump();
    for (const json& c : whole["choices"]) {
      EXPECT_EQ(c["message"]["content"], kAnswerText) << format;
      EXPECT_EQ(c["message"].contains("reasoning_content"), std::string(format) != "none") << format;
    }
    expect_stream_matches_whole(whole, stream_chat(s, body), format);
  }
}

// Structured output: the value is the content (deepseek), or follows the thought's block in
// it (none, deepseek-legacy): the format is honoured as asked, and the value is the text after
// the last <channel|>.
TEST(ReasoningFormatHttp, StructuredOutputAfterTheBlock) {
  LiveServer s;
  s.answer("<|channel>thought\nA record.<channel|>{\"name\": \"Ann\"}");
  for (const char* format : {"deepseek", "none", "deepseek-legacy"}) {
    const std::string f = format;
    const json body = chat_body({{"reasoning_format", format},
                                 {"response_format", {{"type", "json_object"}}},
                                 {"chat_template_kwargs", {{"enable_thinking", true}}}});
    const json whole = whole_chat(s, body);
    const json& msg = whole["choices"][0]["message"];
    const std::string content = msg["content"];
    if (f == "deepseek") {
      EXPECT_EQ(json::parse(content), json({{"name", "Ann"}})) << content;
    } else {
      EXPECT_EQ(content, "<|channel>thought\nA record.<channel|>{\"name\": \"Ann\"}") << f;
      const std::string value = content.substr(content.rfind("<channel|>") + std::string("<channel|>").size());
      EXPECT_EQ(json::parse(value), json({{"name", "Ann"}})) << content;
    }
    EXPECT_EQ(msg.contains("reasoning_content"), f != "none") << whole.dump();
    expect_stream_matches_whole(whole, stream_chat(s, body), f);
  }
}

TEST(ReasoningFormatHttp, ServerDefaultAndRequestOverride) {
  ServerFixtureOptions o;
  o.reasoning_format = ReasoningFormat::kNone;
  LiveServer s(o);
  s.answer(kAnswerText);
  json whole = whole_chat(s, chat_body());
  EXPECT_EQ(whole["choices"][0]["message"]["content"], kAnswerText);
  EXPECT_FALSE(whole["choices"][0]["message"].contains("reasoning_content"));
  for (const char* split : {"deepseek", "auto"}) {
    whole = whole_chat(s, chat_body({{"reasoning_format", split}}));
    EXPECT_EQ(whole["choices"][0]["message"]["content"], "Paris.") << split;
    EXPECT_EQ(whole["choices"][0]["message"]["reasoning_content"], kThought) << split;
  }
}

// The Messages and Responses routes answer in their own shapes, thinking in its own blocks,
// under a server whose chat default is none.
TEST(ReasoningFormatHttp, MessagesAndResponsesAreUnaffected) {
  ServerFixtureOptions o;
  o.reasoning_format = ReasoningFormat::kNone;
  LiveServer s(o);
  s.answer(kAnswerText);
  auto m = s.post("/v1/messages", json{{"model", "x"},
                                       {"max_tokens", 100},
                                       {"messages", json::array({{{"role", "user"}, {"content", "Capital?"}}})}}
                                      .dump());
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200) << m->body;
  const json message = json::parse(m->body);
  ASSERT_EQ(message["content"].size(), 2u) << m->body;
  EXPECT_EQ(message["content"][0]["type"], "thinking");
  EXPECT_EQ(message["content"][0]["thinking"], kThought);
  EXPECT_EQ(message["content"][1]["type"], "text");
  EXPECT_EQ(message["content"][1]["text"], "Paris.");

  auto r = s.post("/v1/responses", json{{"input", "Capital?"}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json response = json::parse(r->body);
  ASSERT_EQ(response["output"].size(), 2u) << r->body;
  EXPECT_EQ(response["output"][0]["type"], "reasoning");
  EXPECT_EQ(response["output"][0]["content"][0]["text"], kThought);
  EXPECT_EQ(response["output_text"], "Paris.");
}

TEST(ReasoningFormatHttp, BadValueIsA400NamingTheField) {
  LiveServer s;
  for (const json& bad : {json("hidden"), json(2), json::array()}) {
    auto r = s.post("/v1/chat/completions", chat_body({{"reasoning_format", bad}}).dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    const json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["type"], "invalid_request_error") << r->body;
    EXPECT_EQ(e["param"], "reasoning_format") << r->body;
  }
}

}  // namespace
}  // namespace gs::server
