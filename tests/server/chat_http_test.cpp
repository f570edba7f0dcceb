// /v1/chat/completions over a live server with a scripted model and the real Gemma 4 text
// layer: reasoning, tool calls (parsed, forced, limited, disabled), stop strings, streaming
// shape and equality with the whole response, logprobs, template errors.
#include <gtest/gtest.h>

#include <map>

#include "server_fixture.h"
#include "text/utf8.h"

namespace gs {
namespace {

using nlohmann::json;
using test::LiveServer;
using test::ServerFixtureOptions;

const json kWeatherTool = json::parse(R"({"type":"function","function":{"name":"get_weather",
  "description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"},
  "unit":{"type":"string","enum":["c","f"]}},"required":["city"]}}})");
const json kTimeTool = json::parse(R"({"type":"function","function":{"name":"get_time",
  "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}})");

json chat_body(const std::string& user, json extra = json::object()) {
  json body{{"messages", json::array({{{"role", "user"}, {"content", user}}})}, {"max_tokens", 200}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

struct Streamed {
  std::string content;
  std::string reasoning;
  std::string finish;
  json usage;
  bool role_first = false;
  bool finish_before_usage = false;
  bool done_last = false;
  struct Call {
    std::string id, name, args;
  };
  std::map<int, Call> calls;
  std::vector<json> chunks;
};

Streamed stream_chat(const LiveServer& s, json body) {
  body["stream"] = true;
  auto r = s.post("/v1/chat/completions", body.dump());
  Streamed out;
  EXPECT_TRUE(r);
  if (!r) return out;
  EXPECT_EQ(r->status, 200) << r->body;
  auto events = test::sse_payloads(r->body);
  out.done_last = !events.empty() && events.back() == "[DONE]";
  bool first = true;
  bool saw_finish = false;
  for (const auto& e : events) {
    if (e == "[DONE]") continue;
    json c = json::parse(e);
    out.chunks.push_back(c);
    if (c.contains("usage") && !c["usage"].is_null()) {
      out.usage = c["usage"];
      out.finish_before_usage = saw_finish && c["choices"].empty();
    }
    if (c["choices"].empty()) continue;
    const json& ch = c["choices"][0];
    const json& d = ch["delta"];
    if (first) out.role_first = d.value("role", "") == "assistant";
    first = false;
    if (d.contains("content") && d["content"].is_string()) out.content += d["content"].get<std::string>();
    if (d.contains("reasoning_content")) out.reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("tool_calls")) {
      for (const auto& tc : d["tool_calls"]) {
        Streamed::Call& call = out.calls[tc["index"].get<int>()];
        if (tc.contains("id")) {
          EXPECT_TRUE(call.id.empty()) << "a call's id came twice";
          call.id = tc["id"];
          EXPECT_EQ(tc["type"], "function");
          EXPECT_TRUE(tc["function"].contains("name")) << "the name comes in the call's first delta";
        }
        if (tc["function"].contains("name")) call.name += tc["function"]["name"].get<std::string>();
        if (tc["function"].contains("arguments")) call.args += tc["function"]["arguments"].get<std::string>();
      }
    }
    if (!ch["finish_reason"].is_null()) {
      out.finish = ch["finish_reason"];
      saw_finish = true;
    }
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

// The fewest leading tokens of `ids` whose text holds `needle` (ids.size() + 1 when none do).
size_t tokens_until(const LiveServer& s, const std::vector<int32_t>& ids, const std::string& needle) {
  for (size_t k = 1; k <= ids.size(); ++k) {
    auto prefix = s.tok->decode(std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k)));
    EXPECT_TRUE(prefix.ok());
    if (prefix.ok() && prefix->find(needle) != std::string::npos) return k;
  }
  return ids.size() + 1;
}

void expect_no_markup(const std::string& text) {
  for (const char* m : {"<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|turn>", "<turn|>", "<|\"|>",
                        "<|tool_response>"}) {
    EXPECT_EQ(text.find(m), std::string::npos) << "markup " << m << " in: " << text;
  }
}

TEST(ChatHttp, ReasoningIsSplitFromContentStreamedOrNot) {
  LiveServer s;
  s.answer("<|channel>thought\nThe capital of France is Paris.<channel|>Paris.");
  json body = chat_body("What is the capital of France?");
  json whole = whole_chat(s, body);
  const json& msg = whole["choices"][0]["message"];
  EXPECT_EQ(msg["content"], "Paris.");
  EXPECT_EQ(msg["reasoning_content"], "The capital of France is Paris.");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  EXPECT_GT(whole["usage"]["completion_tokens_details"]["reasoning_tokens"].get<int>(), 0);
  Streamed st = stream_chat(s, body);
  EXPECT_TRUE(st.role_first);
  EXPECT_TRUE(st.done_last);
  EXPECT_EQ(st.content, "Paris.");
  EXPECT_EQ(st.reasoning, "The capital of France is Paris.");
  EXPECT_EQ(st.finish, "stop");
  expect_no_markup(st.content);
}

// Bug-case 20: the cap hit while thinking is "length", not "stop".
TEST(ChatHttp, LengthWhileReasoning) {
  LiveServer s;
  s.answer("<|channel>thought\nHmm, let me think about this carefully, step by step, and then some more.");
  json whole = whole_chat(s, chat_body("What is the capital of Australia?", {{"max_tokens", 6}}));
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "");
  expect_no_markup(whole["choices"][0]["message"]["reasoning_content"].get<std::string>());
}

// Bug-case 24: a budget ends the thought early and the answer follows.
TEST(ChatHttp, ReasoningBudgetEndsTheThoughtAndTheAnswerFollows) {
  ServerFixtureOptions o;
  o.enable_thinking = true;
  LiveServer s(o);
  s.answer("<|channel>thought\nIs 221 prime? 221 = 13 * 17, so it is not prime, and so on", /*endless=*/true);
  json whole = whole_chat(s, chat_body("Is 221 prime? Think it through.",
                                       {{"reasoning_budget_tokens", 8}, {"max_tokens", 40}}));
  const json& msg = whole["choices"][0]["message"];
  const std::string reasoning = msg.value("reasoning_content", "");
  EXPECT_FALSE(reasoning.empty());
  EXPECT_LE(s.tok->encode(reasoning, false, false).size(), 8u);
  EXPECT_NE(msg["content"].get<std::string>().find("la"), std::string::npos) << whole.dump();
  expect_no_markup(msg["content"].get<std::string>());
  const int reasoning_tokens = whole["usage"]["completion_tokens_details"]["reasoning_tokens"];
  EXPECT_GT(reasoning_tokens, 0);
  EXPECT_LE(reasoning_tokens, 10);  // the budget plus the span's own markers
  EXPECT_EQ(s.runner->n_replaced(), 1);
}

// A reasoning-only final assistant message puts the output inside its thought (F7): the
// budget counts from the first generated token (the engine knew a thought only from the
// <|channel> it generated, so a continued thought ran unbounded), and the answer follows the
// closer, streamed or not.
TEST(ChatHttp, ReasoningBudgetHoldsForAContinuedThought) {
  ServerFixtureOptions o;
  o.enable_thinking = true;
  LiveServer s(o);
  s.answer(" 221 = 13 * 17, so it is not prime, and so on", /*endless=*/true);
  json body = chat_body("Is 221 prime? Think it through.", {{"reasoning_budget_tokens", 8}, {"max_tokens", 40}});
  body["messages"].push_back({{"role", "assistant"}, {"content", ""}, {"reasoning_content", "Let me see:"}});
  json whole = whole_chat(s, body);
  const json& msg = whole["choices"][0]["message"];
  const std::string reasoning = msg.value("reasoning_content", "");
  EXPECT_TRUE(reasoning.starts_with(" 221")) << whole.dump();
  EXPECT_LE(s.tok->encode(reasoning, false, false).size(), 8u) << whole.dump();
  EXPECT_NE(msg["content"].get<std::string>().find("la"), std::string::npos) << whole.dump();
  expect_no_markup(msg["content"].get<std::string>());
  EXPECT_EQ(s.runner->n_replaced(), 1);
  Streamed st = stream_chat(s, body);
  EXPECT_EQ(st.reasoning, reasoning);
  EXPECT_EQ(st.content, msg["content"].get<std::string>());
}

TEST(ChatHttp, ToolCallsAreParsedAndStreamedTheSameWay) {
  LiveServer s;
  // Two calls back to back (bug-case 14), then the model hands over to the tool.
  s.answer("<|tool_call>call:get_weather{city:<|\"|>Tokyo<|\"|>,unit:<|\"|>c<|\"|>}<tool_call|>"
           "<|tool_call>call:get_time{city:<|\"|>Tokyo<|\"|>}<tool_call|><|tool_response>");
  json body = chat_body("Weather and time in Tokyo?", {{"tools", json::array({kWeatherTool, kTimeTool})}});
  json whole = whole_chat(s, body);
  const json& msg = whole["choices"][0]["message"];
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_TRUE(msg["content"].is_null());
  ASSERT_EQ(msg["tool_calls"].size(), 2u);
  EXPECT_EQ(msg["tool_calls"][0]["type"], "function");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json::parse(R"({"city":"Tokyo","unit":"c"})"));
  EXPECT_EQ(msg["tool_calls"][1]["function"]["name"], "get_time");
  EXPECT_NE(msg["tool_calls"][0]["id"], msg["tool_calls"][1]["id"]);
  Streamed st = stream_chat(s, body);
  EXPECT_EQ(st.finish, "tool_calls");
  ASSERT_EQ(st.calls.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(st.calls[i].name, msg["tool_calls"][i]["function"]["name"]);
    EXPECT_EQ(st.calls[i].args, msg["tool_calls"][i]["function"]["arguments"].get<std::string>()) << i;
    EXPECT_FALSE(st.calls[i].id.empty());
  }
  expect_no_markup(st.content);
}

// An assistant prefill that ends inside a tool call it opened was continued as plain text: the
// model's "<|"|>Oslo<|"|>}<tool_call|>" came out as content. The parser starts where the prefill
// leaves it, so the call is a call (its name and its arguments from the prefill's part on),
// streamed or not; a prefill whose call is closed, or that has none, is continued as text.
TEST(ChatHttp, APrefillThatEndsInsideAToolCallIsContinuedAsTheCall) {
  LiveServer s;
  s.answer("Oslo<|\"|>,unit:<|\"|>c<|\"|>}<tool_call|><|tool_response>");
  const auto body_with = [](const std::string& prefill) {
    json body = chat_body("Weather in Oslo?", {{"tools", json::array({kWeatherTool})}});
    body["messages"].push_back({{"role", "assistant"}, {"content", prefill}});
    return body;
  };
  const json body = body_with("Let me look. <|tool_call>call:get_weather{city:<|\"|>");
  json whole = whole_chat(s, body);
  const json& msg = whole["choices"][0]["message"];
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls") << whole.dump();
  EXPECT_TRUE(msg["content"].is_null()) << whole.dump();
  ASSERT_EQ(msg["tool_calls"].size(), 1u) << whole.dump();
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json::parse(R"({"city":"Oslo","unit":"c"})"));
  Streamed st = stream_chat(s, body);
  EXPECT_EQ(st.finish, "tool_calls");
  ASSERT_EQ(st.calls.size(), 1u);
  EXPECT_EQ(st.calls[0].name, "get_weather");
  EXPECT_EQ(st.calls[0].args, msg["tool_calls"][0]["function"]["arguments"].get<std::string>());
  EXPECT_EQ(st.content, "");
  // A call cut inside its name: the prefill's part is not the answer's content.
  s.answer("");
  whole = whole_chat(s, body_with("<|tool_call>call:get_wea"));
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "") << whole.dump();
  EXPECT_FALSE(whole["choices"][0]["message"].contains("tool_calls")) << whole.dump();
  // A closed call before the prefill's end: the output continues the text after it.
  s.answer(" Done.");
  whole = whole_chat(s, body_with("<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|> Asked"));
  EXPECT_EQ(whole["choices"][0]["message"]["content"], " Done.") << whole.dump();
}

// Breaker round 28: a prefill whose text opened a thought and left it open (a client
// continuing a cut answer that reasoning_format none gave as content) had the rest of that
// thought come back as content, its closer dropped: {"content":" moreThe answer."}. The model
// reads the markup as its own open thought (user-defined tokens), so the output goes on as
// reasoning: reasoning_content " more", content "The answer.", streamed as whole, and on the
// Messages route a thinking block then a text block.
TEST(ChatHttp, APrefillWhoseTextOpensAThoughtIsContinuedAsReasoning) {
  LiveServer s;
  s.answer(" more<channel|>The answer.");
  json body = chat_body("Weather in Oslo?");
  body["messages"].push_back({{"role", "assistant"}, {"content", "<|channel>thought\nLet me think"}});
  json whole = whole_chat(s, body);
  const json& msg = whole["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], " more") << whole.dump();
  EXPECT_EQ(msg["content"], "The answer.") << whole.dump();
  Streamed st = stream_chat(s, body);
  EXPECT_EQ(st.reasoning, " more");
  EXPECT_EQ(st.content, "The answer.");
  // reasoning_format none: the thought's rest and its closer, as the continuation of the prefill.
  body["reasoning_format"] = "none";
  whole = whole_chat(s, body);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], " more<channel|>The answer.") << whole.dump();
  body.erase("reasoning_format");
  // Thinking off: the model is inside the thought all the same.
  body["reasoning_effort"] = "none";
  whole = whole_chat(s, body);
  EXPECT_EQ(whole["choices"][0]["message"]["reasoning_content"], " more") << whole.dump();
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "The answer.") << whole.dump();
  // The prefill ends right after the opener: the label the model writes is markup.
  s.answer("thought\nHm.<channel|>Yes.");
  body.erase("reasoning_effort");
  body["messages"].back()["content"] = "Well. <|channel>";
  whole = whole_chat(s, body);
  EXPECT_EQ(whole["choices"][0]["message"]["reasoning_content"], "Hm.") << whole.dump();
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Yes.") << whole.dump();
  // The Messages route: a thinking block, then the text.
  s.answer(" more<channel|>The answer.");
  const json messages = {{"model", "m"},
                         {"max_tokens", 200},
                         {"messages", json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}},
                                                   {{"role", "assistant"}, {"content", "<|channel>thought\nLet me"}}})}};
  auto r = s.post("/v1/messages", messages.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json m = json::parse(r->body);
  ASSERT_EQ(m["content"].size(), 2u) << m.dump();
  EXPECT_EQ(m["content"][0]["type"], "thinking") << m.dump();
  EXPECT_EQ(m["content"][0]["thinking"], " more") << m.dump();
  EXPECT_EQ(m["content"][1]["type"], "text") << m.dump();
  EXPECT_EQ(m["content"][1]["text"], "The answer.") << m.dump();
}

// Bug-case 11: parallel_tool_calls false gives exactly one call.
TEST(ChatHttp, ParallelToolCallsFalseGivesOneCall) {
  LiveServer s;
  s.answer("<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|>"
           "<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|>"
           "<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|>");
  json body = chat_body("Weather in Oslo?", {{"tools", json::array({kWeatherTool})}, {"parallel_tool_calls", false},
                                             {"tool_choice", "required"}});
  json whole = whole_chat(s, body);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(whole["choices"][0]["message"]["tool_calls"].size(), 1u);
  Streamed st = stream_chat(s, body);
  EXPECT_EQ(st.calls.size(), 1u);
  EXPECT_EQ(st.finish, "tool_calls");
}

// A call cut by max_tokens is "length" with parallel_tool_calls false too: closing the cut
// call at the end of the output is not the one complete call that ends it early (it was
// "tool_calls", telling the client that truncated arguments were a finished call).
TEST(ChatHttp, ParallelToolCallsFalseCallCutByMaxTokensIsLength) {
  LiveServer s;
  s.answer("<|tool_call>call:get_weather{city:<|\"|>Oslo, the capital of Norway, a long way north<|\"|>}<tool_call|>");
  for (bool parallel : {true, false}) {
    json body = chat_body("Weather in Oslo?", {{"tools", json::array({kWeatherTool})},
                                               {"parallel_tool_calls", parallel},
                                               {"max_tokens", 8}});
    json whole = whole_chat(s, body);
    EXPECT_EQ(whole["choices"][0]["finish_reason"], "length") << "parallel_tool_calls " << parallel;
    EXPECT_EQ(whole["choices"][0]["message"]["tool_calls"].size(), 1u);
    Streamed st = stream_chat(s, body);
    EXPECT_EQ(st.finish, "length") << "parallel_tool_calls " << parallel;
    EXPECT_EQ(st.calls.size(), 1u);
  }
}

// A stop string that matches after a complete tool call ends the reply, but the reply
// called a tool: finish_reason "tool_calls", as OpenAI gives, streamed or not.
TEST(ChatHttp, StopStringAfterAToolCallStillFinishesWithToolCalls) {
  LiveServer s;
  s.answer("<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|>Then we wait and see.");
  json body = chat_body("Weather in Oslo?", {{"tools", json::array({kWeatherTool})}, {"stop", json::array({"wait"})}});
  json whole = whole_chat(s, body);
  EXPECT_EQ(whole["choices"][0]["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");
  Streamed st = stream_chat(s, body);
  EXPECT_EQ(st.calls.size(), 1u);
  EXPECT_EQ(st.finish, "tool_calls");
}

// What ends the answer early (a stop string, the one call of parallel_tool_calls: false)
// also ends what usage counts, with speculation handing over several tokens a round.
TEST(ChatHttp, EarlyEndUsageCountsOnlyTheTokensShown) {
  test::ServerFixtureOptions o;
  o.has_drafter = true;
  LiveServer s(o);
  const std::string call = "<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|>";
  s.answer(call + call + call);
  json body = chat_body("Weather in Oslo?", {{"tools", json::array({kWeatherTool})}, {"parallel_tool_calls", false},
                                             {"logprobs", true}});
  json whole = whole_chat(s, body);
  ASSERT_EQ(whole["choices"][0]["message"]["tool_calls"].size(), 1u);
  const int n_call = static_cast<int>(s.tok->encode(call, false, true).size());
  // The call ends at its closing '}' or its closer token; nothing of the next call counts.
  EXPECT_LE(whole["usage"]["completion_tokens"].get<int>(), n_call);
  // The answer is the call alone: logprobs.content lists the content's tokens, none here
  // (decision 0055; it listed the call's tokens, as many as usage counted).
  EXPECT_TRUE(whole["choices"][0]["message"]["content"].is_null());
  EXPECT_TRUE(whole["choices"][0]["logprobs"]["content"].empty());

  s.answer("Good morrow to you, good sir, and farewell.");
  body = chat_body("hi", {{"stop", json::array({"to you"})}});
  whole = whole_chat(s, body);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Good morrow ");
  const int n_stop = static_cast<int>(s.tok->encode("Good morrow to you", false, true).size());
  EXPECT_EQ(whole["usage"]["completion_tokens"], n_stop);
  body["stream_options"] = {{"include_usage", true}};  // a stream's option: a 400 without stream
  Streamed st = stream_chat(s, body);
  EXPECT_EQ(st.content, "Good morrow ");
  EXPECT_EQ(st.usage["completion_tokens"], n_stop);
}

// <|turn> is a CONTROL token, hidden when decoded: the parser has to see it, or the role
// line after it reached content ("model\nHello."), and a turn the model began for the user
// ran on into the answer until max_tokens.
TEST(ChatHttp, TurnOpenerInTheOutputNeverLeaksTheRoleLine) {
  LiveServer s;
  s.answer("<|turn>model\nHello there.");
  json body = chat_body("hi");
  json whole = whole_chat(s, body);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Hello there.");
  EXPECT_EQ(stream_chat(s, body).content, "Hello there.");

  s.answer("Hello there.<|turn>user\nAnd now tell me a joke.", /*endless=*/true);
  whole = whole_chat(s, body);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Hello there.");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  const int n_shown = static_cast<int>(s.tok->encode("Hello there.<|turn>user", false, true).size());
  EXPECT_LE(whole["usage"]["completion_tokens"].get<int>(), n_shown + 1);
  Streamed st = stream_chat(s, body);
  EXPECT_EQ(st.content, "Hello there.");
  EXPECT_EQ(st.finish, "stop");

  // After a tool call the reply still finishes with "tool_calls".
  s.answer("<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|><|turn>user\nthanks", true);
  body = chat_body("Weather in Oslo?", {{"tools", json::array({kWeatherTool})}});
  whole = whole_chat(s, body);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(whole["choices"][0]["message"]["tool_calls"].size(), 1u);
  EXPECT_TRUE(whole["choices"][0]["message"]["content"].is_null());
}

// tool_choice naming a function: the prompt already opens its call up to '{', so the
// model's text is the argument dict.
TEST(ChatHttp, NamedToolChoiceForcesTheCall) {
  LiveServer s;
  s.answer("city:<|\"|>Rome<|\"|>}<tool_call|><|tool_response>");
  json body = chat_body("Anything.", {{"tools", json::array({kWeatherTool, kTimeTool})},
                                      {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}});
  json whole = whole_chat(s, body);
  const json& calls = whole["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << whole.dump();
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()), json::parse(R"({"city":"Rome"})"));
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");
  Streamed st = stream_chat(s, body);
  ASSERT_EQ(st.calls.size(), 1u);
  EXPECT_EQ(st.calls[0].name, "get_weather");
  EXPECT_EQ(st.calls[0].args, calls[0]["function"]["arguments"].get<std::string>());
}

// Bug-case 13: with tool_choice "none" no call is parsed and no markup reaches content.
TEST(ChatHttp, ToolChoiceNoneKeepsMarkupOutOfContent) {
  LiveServer s;
  s.answer("<|tool_call>call:get_weather{city:<|\"|>Lima<|\"|>}<tool_call|>It is sunny in Lima.");
  json whole = whole_chat(s, chat_body("Weather in Lima? One sentence.",
                                       {{"tools", json::array({kWeatherTool})}, {"tool_choice", "none"},
                                        {"chat_template_kwargs", {{"enable_thinking", false}}}}));
  const json& msg = whole["choices"][0]["message"];
  EXPECT_FALSE(msg.contains("tool_calls"));
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  expect_no_markup(msg["content"].get<std::string>());
}

TEST(ChatHttp, StopStringsAreNeverSentInPart) {
  LiveServer s;
  s.answer("Hello there. STOP and more text");
  json body = chat_body("hi", {{"stop", json::array({"STOP"})}});
  json whole = whole_chat(s, body);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Hello there. ");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  Streamed st = stream_chat(s, body);
  EXPECT_EQ(st.content, "Hello there. ");
  for (const auto& c : st.chunks) {
    if (c["choices"].empty()) continue;
    const json& d = c["choices"][0]["delta"];
    if (d.contains("content")) {
      EXPECT_EQ(d["content"].get<std::string>().find("ST"), std::string::npos);
    }
  }
}

// min_tokens (vLLM) holds the stop strings back too: none is matched in the text of the
// first min_tokens tokens, as vLLM checks them (before, a stop string there ended a reply
// that asked for at least min_tokens tokens after a few). Later ones still stop it, streamed
// or not, on the chat and the completions route.
TEST(ChatHttp, MinTokensHoldsStopStringsBackToo) {
  LiveServer s;
  const std::string text = "Hello there. STOP and more STOP text";
  s.answer(text);
  const std::vector<int32_t> ids = s.tok->encode(text, false, false);
  const size_t k = tokens_until(s, ids, "STOP and");  // the tokens up to "STOP and"
  ASSERT_LT(k, ids.size());
  json body = chat_body("hi", {{"stop", json::array({"STOP"})}, {"min_tokens", k}});
  json whole = whole_chat(s, body);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Hello there. STOP and more ");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  Streamed st = stream_chat(s, body);
  EXPECT_EQ(st.content, "Hello there. STOP and more ");
  EXPECT_EQ(st.finish, "stop");
  auto r = s.post("/v1/completions",
                  json{{"prompt", "hi"}, {"max_tokens", 200}, {"stop", "STOP"}, {"min_tokens", k}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["choices"][0]["text"], "Hello there. STOP and more ");
  // Without min_tokens the first one stops it, as before.
  whole = whole_chat(s, chat_body("hi", {{"stop", json::array({"STOP"})}}));
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Hello there. ");
}

// A stop string that begins in the text of the first min_tokens tokens and ends after it is
// matched, and cut whole (decision 0007: vLLM checks, from token min_tokens + 1 on, the new text
// with the stop string's length of text before it). Before, the text of the first min_tokens
// tokens was released unheld and the stop string that straddled the boundary was never seen:
// the whole answer came back. Streamed and whole alike, chat and completions.
TEST(ChatHttp, MinTokensMatchesAStopStringThatStraddlesTheBoundary) {
  LiveServer s;
  const std::string text = "Hello there. STOP and more STOP text";
  s.answer(text);
  const std::vector<int32_t> ids = s.tok->encode(text, false, false);
  // The tokens up to "there": the stop string begins in them and ends after.
  const size_t k = tokens_until(s, ids, "there");
  ASSERT_LT(k, ids.size());
  auto upto_k = s.tok->decode(std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k)));
  ASSERT_EQ(upto_k->find("there. STOP"), std::string::npos) << *upto_k;
  const json stop = json::array({"there. STOP"});
  json body = chat_body("hi", {{"stop", stop}, {"min_tokens", k}});
  json whole = whole_chat(s, body);
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "Hello ");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  Streamed st = stream_chat(s, body);
  EXPECT_EQ(st.content, "Hello ");
  EXPECT_EQ(st.finish, "stop");
  for (const bool stream : {false, true}) {
    auto r = s.post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 200}, {"stop", stop}, {"min_tokens", k},
                                            {"stream", stream}}.dump());
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    std::string got;
    if (!stream) {
      got = json::parse(r->body)["choices"][0]["text"];
    } else {
      for (size_t at = r->body.find("data: {"); at != std::string::npos; at = r->body.find("data: {", at + 1)) {
        const json c = json::parse(r->body.substr(at + 6, r->body.find('\n', at) - at - 6));
        if (!c["choices"].empty()) got += c["choices"][0]["text"].get<std::string>();
      }
    }
    EXPECT_EQ(got, "Hello ") << (stream ? "streamed" : "whole") << ": " << r->body;
  }
}

// Bug-case 29: finish chunk, then one usage chunk with choices [], then [DONE]; no usage
// chunk unless asked. Asked, every chunk before it carries "usage": null (OpenAI's shape;
// the key was absent).
TEST(ChatHttp, UsageChunkOrder) {
  LiveServer s;
  s.answer("Hi there.");
  Streamed with = stream_chat(s, chat_body("hi", {{"stream_options", {{"include_usage", true}}}}));
  EXPECT_TRUE(with.finish_before_usage);
  EXPECT_TRUE(with.done_last);
  ASSERT_TRUE(with.usage.is_object());
  EXPECT_GT(with.usage["completion_tokens"].get<int>(), 0);
  EXPECT_EQ(with.usage["total_tokens"].get<int>(),
            with.usage["prompt_tokens"].get<int>() + with.usage["completion_tokens"].get<int>());
  EXPECT_TRUE(with.chunks.back()["choices"].empty());
  const json& finish_chunk = with.chunks[with.chunks.size() - 2];
  EXPECT_EQ(finish_chunk["choices"][0]["finish_reason"], "stop");
  for (size_t i = 0; i + 1 < with.chunks.size(); ++i) {
    EXPECT_TRUE(with.chunks[i].contains("usage") && with.chunks[i]["usage"].is_null()) << with.chunks[i].dump();
  }
  EXPECT_EQ(finish_chunk["usage"], nullptr);
  Streamed without = stream_chat(s, chat_body("hi"));
  EXPECT_TRUE(without.usage.is_null());
  EXPECT_FALSE(without.chunks.back()["choices"].empty());
  for (const json& c : without.chunks) EXPECT_FALSE(c.contains("usage")) << c.dump();
}

// Bug-case 40: running into the end of the context while thinking ends with "length", and
// the server goes on.
TEST(ChatHttp, ContextEndWhileReasoningIsLength) {
  ServerFixtureOptions o;
  o.n_ctx = 96;
  o.enable_thinking = true;
  LiveServer s(o);
  s.answer("<|channel>thought\nLet me continue the text", /*endless=*/true);
  json body{{"messages", json::array({{{"role", "user"}, {"content", "Continue the text: once upon a time"}}})}};
  json whole = whole_chat(s, body);  // no max_tokens: only the context stops it
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(whole["usage"]["total_tokens"], 96);
  Streamed st = stream_chat(s, body);
  EXPECT_EQ(st.finish, "length");
  EXPECT_TRUE(st.done_last);
  test::expect_healthy(s);
}

TEST(ChatHttp, StreamedLogprobsCoverEveryToken) {
  LiveServer s;
  s.answer("Good day to you.");
  json body = chat_body("hi", {{"logprobs", true}, {"top_logprobs", 1}, {"stream_options", {{"include_usage", true}}}});
  Streamed st = stream_chat(s, body);
  size_t n = 0;
  for (const auto& c : st.chunks) {
    if (c["choices"].empty() || c["choices"][0]["logprobs"].is_null()) continue;
    for (const auto& e : c["choices"][0]["logprobs"]["content"]) {
      EXPECT_EQ(e["top_logprobs"].size(), 1u);
      ++n;
    }
  }
  // Every generated token but the end of turn has an entry.
  EXPECT_EQ(n, static_cast<size_t>(st.usage["completion_tokens"].get<int>() - 1));
}

// A stop string that ends a chat answer leaves its tokens out of logprobs.content: the
// entries spell exactly the content returned (a token the stop string begins inside is cut to
// its part before it), streamed and whole; streamed, no entry comes before its text (decision
// 0053). Before, the token that completed the stop string was listed.
TEST(ChatHttp, LogprobsSpellExactlyTheContentAStopStringLeft) {
  LiveServer s;
  const std::string answer = "Good day to you, fair sir.";
  s.answer(answer);
  for (const char* stop : {" to", "o y", "fair", "G"}) {
    const json body = chat_body("hi", {{"logprobs", true}, {"top_logprobs", 1}, {"stop", {stop}}});
    const json whole = whole_chat(s, body);
    const std::string content = whole["choices"][0]["message"]["content"];
    EXPECT_EQ(content, answer.substr(0, answer.find(stop))) << stop;
    std::string spelled;
    for (const auto& e : whole["choices"][0]["logprobs"]["content"]) {
      spelled += e["token"].get<std::string>();
      std::string from_bytes;
      for (const auto& b : e["bytes"]) from_bytes += static_cast<char>(b.get<int>());
      EXPECT_EQ(from_bytes, e["token"].get<std::string>()) << stop;
    }
    EXPECT_EQ(spelled, content) << stop << ": " << whole["choices"][0]["logprobs"].dump();

    Streamed st = stream_chat(s, body);
    EXPECT_EQ(st.content, content) << stop;
    std::string sent, streamed;
    for (const auto& c : st.chunks) {
      if (c["choices"].empty()) continue;
      const json& ch = c["choices"][0];
      if (ch["delta"].contains("content") && ch["delta"]["content"].is_string()) sent += ch["delta"]["content"];
      if (!ch["logprobs"].is_object()) continue;
      for (const auto& e : ch["logprobs"]["content"]) {
        for (const auto& b : e["bytes"]) streamed += static_cast<char>(b.get<int>());
      }
      EXPECT_EQ(sent.compare(0, streamed.size(), streamed), 0) << stop << ": entries ahead of the text: " << streamed;
    }
    EXPECT_EQ(streamed, content) << stop;
  }
}

// Chat's logprobs.content lists the tokens of the returned content only, spelling it exactly
// (decision 0055): the thinking (returned apart as reasoning_content), the calls and the markup
// around them were listed too, and where the parser dropped or rewrote text a stop string was
// not cut from them. Whole and streamed, with and without a stop string; with reasoning_format
// none the thinking is content, and its tokens are listed.
TEST(ChatHttp, LogprobsSpellExactlyTheReturnedContent) {
  LiveServer s;
  struct Case {
    const char* answer;
    json extra;
  };
  const std::vector<Case> cases = {
      {"<|channel>thought\nThe capital of France is Paris.<channel|>Paris it is.", json::object()},
      {"<|channel>thought\nHmm.<channel|>\n\n  Paris, fair sir.", json::object()},
      {"<|channel>thought\nHmm.<channel|>\n\n  Paris, fair sir.", {{"stop", {"fair"}}}},
      {"<|channel>thought\nHmm.<channel|>  Paris, fair sir.", {{"stop", {" P", "sir"}}}},
      {"<|channel>thought\nThink.<channel|>Paris<|turn>model\nagain, fair sir.", {{"stop", {"fair"}}}},
      {"Let me look. <|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|>",
       {{"tools", json::array({kWeatherTool})}}},
      {"<|channel>thought\nThe capital.<channel|>Paris, fair sir.", {{"reasoning_format", "none"}, {"stop", {"sir"}}}},
      {"<|channel>thought\nThe capital.<channel|>Paris, fair sir.", {{"reasoning_format", "deepseek-legacy"}}},
      // Characters of several bytes, which a vocabulary may split across byte tokens.
      {"<|channel>thought\n\u4f60\u597d.<channel|>\u5df4\u9ece, fair sir \U0001F339.", json::object()},
      {"<|channel>thought\nHmm.<channel|>\u5df4\u9ece \u00e9t\u00e9, fair sir.", {{"stop", {"\u00e9t"}}}},
  };
  for (const Case& c : cases) {
    s.answer(c.answer);
    json body = chat_body("hi", {{"logprobs", true}, {"top_logprobs", 1}});
    for (const auto& [k, v] : c.extra.items()) body[k] = v;
    const json whole = whole_chat(s, body);
    const json& msg = whole["choices"][0]["message"];
    const std::string content = msg["content"].is_string() ? msg["content"].get<std::string>() : "";
    // The entries' bytes spell the content; a token's text is its bytes where they are a whole
    // UTF-8 text, and U+FFFD stands for the bytes of a character split across tokens.
    std::string spelled;
    for (const auto& e : whole["choices"][0]["logprobs"]["content"]) {
      std::string from_bytes;
      for (const auto& b : e["bytes"]) from_bytes += static_cast<char>(b.get<int>());
      spelled += from_bytes;
      if (text::is_valid_utf8(from_bytes)) {
        EXPECT_EQ(from_bytes, e["token"].get<std::string>()) << c.answer;
      } else {
        EXPECT_NE(e["token"].get<std::string>().find("\xEF\xBF\xBD"), std::string::npos) << c.answer;
      }
    }
    EXPECT_EQ(spelled, content) << c.answer << " " << c.extra.dump() << ": "
                                << whole["choices"][0]["logprobs"].dump();
    if (msg.contains("reasoning_content") && msg["reasoning_content"].is_string() && content.empty()) {
      EXPECT_TRUE(whole["choices"][0]["logprobs"]["content"].empty());
    }

    Streamed st = stream_chat(s, body);
    EXPECT_EQ(st.content, content) << c.answer;
    std::string sent, streamed;
    for (const auto& chunk : st.chunks) {
      if (chunk["choices"].empty()) continue;
      const json& ch = chunk["choices"][0];
      if (ch["delta"].contains("content") && ch["delta"]["content"].is_string()) sent += ch["delta"]["content"];
      if (!ch["logprobs"].is_object()) continue;
      for (const auto& e : ch["logprobs"]["content"]) {
        for (const auto& b : e["bytes"]) streamed += static_cast<char>(b.get<int>());
      }
      EXPECT_EQ(sent.compare(0, streamed.size(), streamed), 0) << c.answer << ": entries ahead of the text: " << streamed;
    }
    EXPECT_EQ(streamed, content) << c.answer << " " << c.extra.dump();
  }
}

TEST(ChatHttp, LogprobsShape) {
  LiveServer s;
  s.answer("Good day.");
  json whole = whole_chat(s, chat_body("hi", {{"logprobs", true}, {"top_logprobs", 2}}));
  const json& lp = whole["choices"][0]["logprobs"]["content"];
  ASSERT_TRUE(lp.is_array());
  ASSERT_FALSE(lp.empty());
  EXPECT_TRUE(lp[0]["token"].is_string());
  EXPECT_TRUE(lp[0]["logprob"].is_number());
  EXPECT_TRUE(lp[0]["bytes"].is_array());
  EXPECT_EQ(lp[0]["top_logprobs"].size(), 2u);
  json plain = whole_chat(s, chat_body("hi"));
  EXPECT_TRUE(plain["choices"][0]["logprobs"].is_null());
}

// Bug-cases 50 and 53: several system messages are fine; a tool result naming no call is a
// clear 400, never a 500.
TEST(ChatHttp, TemplateEdgeCases) {
  LiveServer s;
  s.answer("Hello.");
  json two_systems = json::parse(R"({"messages":[{"role":"system","content":"You are terse."},
    {"role":"system","content":"Memory: likes tea."},{"role":"user","content":"hi"}]})");
  EXPECT_EQ(s.post("/v1/chat/completions", two_systems.dump())->status, 200);
  json orphan = json::parse(R"({"messages":[{"role":"user","content":"Weather?"},
    {"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"c9","content":"sunny"}]})");
  auto r = s.post("/v1/chat/completions", orphan.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["type"], "invalid_request_error");
  json results = json::parse(R"({"messages":[{"role":"user","content":"Weather and time?"},
    {"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}},
                                      {"id":"c2","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"c2","content":"noon"},{"role":"tool","tool_call_id":"c1","content":"sunny"}],
    "tools":[]})");
  results["tools"] = json::array({kWeatherTool, kTimeTool});
  EXPECT_EQ(s.post("/v1/chat/completions", results.dump())->status, 200);
}

}  // namespace
}  // namespace gs
