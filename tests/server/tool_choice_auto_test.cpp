// tool_choice auto over HTTP on the real engine (the shakes model on the CPU, drafter on and
// off): the model's text is its own until it opens a call; from the opener on the call names a
// declared function, its arguments follow that function's schema, and only an end (or, with
// parallel calls, another such call) follows it (decision 0065, the lazy call grammar). Before,
// everything after the opener was the model's, and the shakes model's junk there came back as
// no call at all (the content cut at the opener) or as a malformed one.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "server/shakes_http.h"

namespace gs {
namespace {

using json = nlohmann::json;

// "get" takes an integer a in [-5, 5]; "get_weather" a unit "C" or "F".
json tools_json() {
  return json::parse(R"([
    {"type":"function","function":{"name":"get","parameters":{"type":"object",
      "properties":{"a":{"type":"integer","minimum":-5,"maximum":5}},"required":["a"],"additionalProperties":false}}},
    {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
      "properties":{"unit":{"enum":["C","F"]}},"required":["unit"],"additionalProperties":false}}}])");
}

bool valid_call(const std::string& name, const std::string& arguments) {
  const json args = json::parse(arguments, nullptr, false);
  if (name == "get") {
    return args.is_object() && args.size() == 1 && args.contains("a") && args["a"].is_number_integer() &&
           args["a"].get<int64_t>() >= -5 && args["a"].get<int64_t>() <= 5;
  }
  return name == "get_weather" && (args == json({{"unit", "C"}}) || args == json({{"unit", "F"}}));
}

// A whole or streamed chat answer: its content, reasoning, calls (a stream's pieces joined by
// index) and finish_reason; for a stream, whether content came after a call had begun.
struct Answer {
  std::string content, reasoning, finish;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
  bool content_after_call = false;
};

Answer answer_of(const std::string& body, bool stream) {
  Answer a;
  if (stream) {
    for (const json& c : test::sse_choice_chunks(body)) {
      const json& ch = c["choices"][0];
      if (ch["finish_reason"].is_string()) a.finish = ch["finish_reason"];
      const json& d = ch["delta"];
      if (d.contains("content") && d["content"].is_string() && !d["content"].get<std::string>().empty()) {
        a.content += d["content"].get<std::string>();
        if (!a.calls.empty()) a.content_after_call = true;
      }
      if (d.contains("reasoning_content") && d["reasoning_content"].is_string()) {
        a.reasoning += d["reasoning_content"].get<std::string>();
      }
      if (!d.contains("tool_calls")) continue;
      for (const json& t : d["tool_calls"]) {
        const size_t i = t["index"].get<size_t>();
        if (a.calls.size() <= i) a.calls.resize(i + 1);
        const json& f = t["function"];
        if (f.contains("name") && f["name"].is_string()) a.calls[i].first += f["name"].get<std::string>();
        if (f.contains("arguments") && f["arguments"].is_string()) a.calls[i].second += f["arguments"].get<std::string>();
      }
    }
    return a;
  }
  const json choice = json::parse(body)["choices"][0];
  a.finish = choice["finish_reason"];
  const json& m = choice["message"];
  if (m["content"].is_string()) a.content = m["content"];
  if (m.contains("reasoning_content") && m["reasoning_content"].is_string()) a.reasoning = m["reasoning_content"];
  if (m.contains("tool_calls")) {
    for (const json& t : m["tool_calls"]) a.calls.emplace_back(t["function"]["name"], t["function"]["arguments"]);
  }
  return a;
}

class AutoToolChoice : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { server_.start(GetParam()); }
  void TearDown() override { server_.stop(); }

  int32_t opener() const { return server_.tokenizer().find_token("<|tool_call>").value_or(-1); }

  // A chat request with the tools offered (tool_choice auto, the default) and a bias toward the
  // call opener: the shakes model, which never calls on its own, then writes some text and
  // opens a call (bias 20), or opens one at once and again after each (bias 100).
  json body(int bias, double temperature, int seed) const {
    return {{"messages", json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}}})},
            {"tools", tools_json()},
            {"max_tokens", 64},
            {"temperature", temperature},
            {"seed", seed},
            {"logit_bias", {{std::to_string(opener()), bias}}}};
  }

  test::ShakesHttp server_;
};

// Every call the model makes names a declared function and, unless max_tokens cut it, follows
// its schema; with parallel_tool_calls false there is one; no content comes after a call; an
// answer that made a call finishes with tool_calls unless cut. Thinking on and off, streamed and
// whole. Before: no answer held a call (the junk after the opener did not parse as one).
TEST_P(AutoToolChoice, CallsNameDeclaredFunctionsAndFollowTheirSchemas) {
  int with_calls = 0, answers = 0, with_text = 0;
  for (const int bias : {20, 100}) {
    for (const bool thinking : {false, true}) {
      for (const bool parallel : {true, false}) {
        for (int seed = 1; seed <= 3; ++seed) {
          json b = body(bias, bias == 100 ? 2.0 : 1.0, seed);
          b["parallel_tool_calls"] = parallel;
          b["chat_template_kwargs"] = {{"enable_thinking", thinking}};
          for (const bool stream : {false, true}) {
            b["stream"] = stream;
            auto r = server_.post(b);
            ASSERT_TRUE(r);
            ASSERT_EQ(r->status, 200) << r->body;
            const std::string what = "bias " + std::to_string(bias) + " thinking " + std::to_string(thinking) +
                                     " parallel " + std::to_string(parallel) + " seed " + std::to_string(seed) +
                                     " stream " + std::to_string(stream) + ": " + r->body;
            const Answer a = answer_of(r->body, stream);
            ++answers;
            EXPECT_EQ(a.content.find("call:"), std::string::npos) << what;
            EXPECT_FALSE(a.content_after_call) << what;
            if (a.calls.empty()) continue;
            ++with_calls;
            if (!a.content.empty()) ++with_text;
            if (!parallel) {
              EXPECT_EQ(a.calls.size(), 1u) << what;
            }
            EXPECT_TRUE(a.finish == "tool_calls" || a.finish == "length") << what;
            for (size_t i = 0; i < a.calls.size(); ++i) {
              const auto& [name, arguments] = a.calls[i];
              EXPECT_TRUE(name == "get" || name == "get_weather") << "call " << i << " in " << what;
              if (i + 1 == a.calls.size() && a.finish == "length") continue;  // cut by max_tokens
              EXPECT_TRUE(valid_call(name, arguments)) << "call " << i << " " << name << " " << arguments << " in "
                                                       << what;
            }
          }
        }
      }
    }
  }
  std::printf("[ info ] %d of %d answers called, %d of them after text\n", with_calls, answers, with_text);
  EXPECT_GT(with_calls, answers * 3 / 4);
  EXPECT_GT(with_text, 0);  // text, then a call
}

// The text before the opener is the model's, unmasked: greedy, the content before a call equals
// the start of the answer to the same request with the opener banned (a bias that does not make
// the opener the greedy pick leaves every other pick as it is).
TEST_P(AutoToolChoice, TheTextBeforeACallIsTheModelsOwn) {
  int compared = 0;
  for (const std::string prompt : {"Weather in Oslo?", "ROMEO:", "What time is it in Paris, and the weather?"}) {
    for (const bool thinking : {false, true}) {
      json b = body(20, 0.0, 1);
      b["messages"][0]["content"] = prompt;
      b["chat_template_kwargs"] = {{"enable_thinking", thinking}};
      auto r = server_.post(b);
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << r->body;
      const Answer called = answer_of(r->body, false);
      b["logit_bias"] = {{std::to_string(opener()), -100}};
      auto q = server_.post(b);
      ASSERT_TRUE(q);
      ASSERT_EQ(q->status, 200) << q->body;
      const Answer free = answer_of(q->body, false);
      EXPECT_TRUE(free.calls.empty()) << q->body;
      if (called.calls.empty()) continue;
      ++compared;
      EXPECT_EQ(free.reasoning.substr(0, called.reasoning.size()), called.reasoning) << r->body << "\n" << q->body;
      if (!called.content.empty()) {
        EXPECT_EQ(free.content.substr(0, called.content.size()), called.content) << r->body << "\n" << q->body;
      }
      EXPECT_TRUE(valid_call(called.calls[0].first, called.calls[0].second) || called.finish == "length") << r->body;
    }
  }
  EXPECT_GT(compared, 0);
}

// An assistant prefill that ends after the call opener, or inside the call's name, on the chat
// and Messages routes: the rest is a call of a declared function under its schema. Before, the
// model wrote on freely and the answer was text.
TEST_P(AutoToolChoice, ACallThePrefillOpenedIsADeclaredCall) {
  json anthropic_tools = json::array();
  for (const json& t : tools_json()) {
    anthropic_tools.push_back({{"name", t["function"]["name"]}, {"input_schema", t["function"]["parameters"]}});
  }
  int calls = 0;
  for (const std::string prefill : {"<|tool_call>", "Let me look.<|tool_call>call:get"}) {
    for (int seed = 1; seed <= 4; ++seed) {
      const json messages = json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}},
                                         {{"role", "assistant"}, {"content", prefill}}});
      const std::string what = "prefill '" + prefill + "' seed " + std::to_string(seed);
      json c = {{"messages", messages}, {"tools", tools_json()}, {"max_tokens", 40}, {"temperature", 1.5},
                {"seed", seed}, {"parallel_tool_calls", false}};
      auto r = server_.post(c);
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << r->body;
      const Answer a = answer_of(r->body, false);
      ASSERT_EQ(a.calls.size(), 1u) << what << ": " << r->body;
      EXPECT_EQ(a.content.find("call:"), std::string::npos) << what << ": " << r->body;
      if (a.finish != "length") {
        EXPECT_EQ(a.finish, "tool_calls") << what << ": " << r->body;
        EXPECT_TRUE(valid_call(a.calls[0].first, a.calls[0].second)) << what << ": " << r->body;
        ++calls;
      }
      json m = {{"model", "shakes"}, {"max_tokens", 40}, {"temperature", 1.5}, {"messages", messages},
                {"tools", anthropic_tools}, {"tool_choice", {{"type", "auto"}, {"disable_parallel_tool_use", true}}}};
      auto ma = server_.post(m, "/v1/messages");
      ASSERT_TRUE(ma);
      ASSERT_EQ(ma->status, 200) << ma->body;
      const json msg = json::parse(ma->body);
      int uses = 0;
      for (const json& block : msg["content"]) {
        if (block["type"] != "tool_use") continue;
        ++uses;
        if (msg["stop_reason"] == "tool_use") {
          EXPECT_TRUE(valid_call(block["name"], block["input"].dump())) << what << " (messages): " << ma->body;
        }
      }
      EXPECT_EQ(uses, 1) << what << " (messages): " << ma->body;
    }
  }
  EXPECT_GT(calls, 4);
}

// max_tokens that ends the answer inside a call's header ("<|tool_call>call:ge"), which the lazy
// grammar holds to a declared function's opener: no call and no content, whole and streamed
// alike, with or without text before the call; and the same for a call made instead of a
// structured value (response_format beside the tools), and for a call a prefill opened. Before
// (decision 0067), the header's text came out as content: "c", "ca", "call", "call:", "call:ge"
// (finish "length").
TEST_P(AutoToolChoice, ACallCutInItsHeaderLeavesNoContent) {
  int cut = 0;
  for (const bool structured : {false, true}) {
    for (const int bias : {100, 20}) {
      for (int max_tokens = 1; max_tokens <= 14; ++max_tokens) {
        json b = body(bias, 0.0, 1);
        b["max_tokens"] = max_tokens;
        if (structured) b["response_format"] = {{"type", "json_object"}};
        // The same request given room for the whole call: its text before the call.
        json whole = b;
        whole["max_tokens"] = 64;
        auto w = server_.post(whole);
        ASSERT_TRUE(w);
        ASSERT_EQ(w->status, 200) << w->body;
        const Answer full = answer_of(w->body, false);
        ASSERT_FALSE(full.calls.empty()) << w->body;
        for (const bool stream : {false, true}) {
          b["stream"] = stream;
          auto r = server_.post(b);
          ASSERT_TRUE(r);
          ASSERT_EQ(r->status, 200) << r->body;
          const std::string what = "structured " + std::to_string(structured) + " bias " + std::to_string(bias) +
                                   " max_tokens " + std::to_string(max_tokens) + " stream " +
                                   std::to_string(stream) + ": " + r->body;
          const Answer a = answer_of(r->body, stream);
          EXPECT_EQ(a.content.find("call"), std::string::npos) << what;
          // The content is the start of the text before the call, never more.
          EXPECT_EQ(full.content.substr(0, a.content.size()), a.content) << what;
          if (a.calls.empty()) {
            EXPECT_EQ(a.finish, "length") << what;
            if (a.content == full.content) ++cut;  // the answer ended inside the call's header
          } else {
            EXPECT_EQ(a.calls[0].first, full.calls[0].first) << what;
          }
        }
      }
    }
  }
  EXPECT_GT(cut, 0);
  // A prefill that ends in the opener leaves the `call` keyword to the model: cut inside it, the
  // answer was content "ca" on the chat route and a text block "ca" on the Messages route.
  json anthropic_tools = json::array();
  for (const json& t : tools_json()) {
    anthropic_tools.push_back({{"name", t["function"]["name"]}, {"input_schema", t["function"]["parameters"]}});
  }
  const json messages = json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}},
                                     {{"role", "assistant"}, {"content", "<|tool_call>"}}});
  for (int max_tokens = 1; max_tokens <= 6; ++max_tokens) {
    const json c = {{"messages", messages}, {"tools", tools_json()}, {"max_tokens", max_tokens}, {"temperature", 0.0}};
    auto r = server_.post(c);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const Answer a = answer_of(r->body, false);
    EXPECT_EQ(a.content, "") << "max_tokens " << max_tokens << ": " << r->body;
    const json m = {{"model", "shakes"}, {"max_tokens", max_tokens}, {"temperature", 0.0}, {"messages", messages},
                    {"tools", anthropic_tools}};
    auto ma = server_.post(m, "/v1/messages");
    ASSERT_TRUE(ma);
    ASSERT_EQ(ma->status, 200) << ma->body;
    const json answer = json::parse(ma->body);
    for (const json& block : answer["content"]) {
      EXPECT_NE(block["type"], "text") << "max_tokens " << max_tokens << ": " << ma->body;
    }
  }
}

// With parallel calls off, the first call's closer ends the answer: a logit_bias that bans every
// end-of-generation token (llama-server's `false`, which clients send to keep the model from
// stopping early) takes nothing from it, under tool_choice auto (the lazy grammar) and
// "required" alike, every time. Before (decision 0067) the engine ran one more step after the
// closer, whose mask (the ends alone) the bans emptied, and failed the request with a 400 unless
// the HTTP side had already stopped it at the call's end: the same request answered 200 or 400
// by timing (without the drafter, 400 nearly every time).
TEST_P(AutoToolChoice, ASingleCallEndsTheAnswerWhenTheEndsAreBanned) {
  json bans = json::array({json::array({opener(), 100})});
  for (const int32_t end : server_.tokenizer().eog_ids()) bans.push_back(json::array({end, false}));
  for (const std::string choice : {"auto", "required"}) {
    for (int i = 0; i < 6; ++i) {
      json b = body(100, 0.0, 1);
      b["logit_bias"] = bans;
      b["tool_choice"] = choice;
      b["parallel_tool_calls"] = false;
      b["stream"] = i % 2 == 1;
      auto r = server_.post(b);
      ASSERT_TRUE(r);
      const std::string what = choice + " try " + std::to_string(i) + ": " + r->body;
      ASSERT_EQ(r->status, 200) << what;
      const Answer a = answer_of(r->body, b["stream"]);
      ASSERT_EQ(a.calls.size(), 1u) << what;
      EXPECT_TRUE(valid_call(a.calls[0].first, a.calls[0].second)) << what;
      EXPECT_EQ(a.finish, "tool_calls") << what;
      EXPECT_EQ(r->body.find("\"error\""), std::string::npos) << what;
    }
  }
}

// Greedy answers with calls are the same with the drafter as without (drafts are verified under
// the masks the sampled token got), streamed or whole.
TEST(AutoToolChoiceDrafter, GreedyCallsAreTheSameWithAndWithoutTheDrafter) {
  test::ShakesHttp plain, drafted;
  plain.start(false);
  drafted.start(true);
  const int32_t opener = plain.tokenizer().find_token("<|tool_call>").value_or(-1);
  int with_calls = 0;
  for (const int bias : {0, 20, 100}) {
    for (const bool thinking : {false, true}) {
      for (const bool parallel : {true, false}) {
        json b = {{"messages", json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}}})},
                  {"tools", tools_json()},
                  {"max_tokens", 48},
                  {"temperature", 0.0},
                  {"parallel_tool_calls", parallel},
                  {"chat_template_kwargs", {{"enable_thinking", thinking}}},
                  {"logit_bias", {{std::to_string(opener), bias}}}};
        for (const bool stream : {false, true}) {
          b["stream"] = stream;
          auto p = plain.post(b);
          auto d = drafted.post(b);
          ASSERT_TRUE(p && d);
          ASSERT_EQ(p->status, 200) << p->body;
          ASSERT_EQ(d->status, 200) << d->body;
          const Answer x = answer_of(p->body, stream), y = answer_of(d->body, stream);
          const std::string what = "bias " + std::to_string(bias) + " thinking " + std::to_string(thinking) +
                                   " parallel " + std::to_string(parallel) + " stream " + std::to_string(stream);
          EXPECT_EQ(x.content, y.content) << what;
          EXPECT_EQ(x.reasoning, y.reasoning) << what;
          EXPECT_EQ(x.calls, y.calls) << what;
          EXPECT_EQ(x.finish, y.finish) << what;
          if (!x.calls.empty()) ++with_calls;
        }
      }
    }
  }
  EXPECT_GT(with_calls, 0);
}

INSTANTIATE_TEST_SUITE_P(Drafter, AutoToolChoice, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "DrafterOn" : "DrafterOff"; });

}  // namespace
}  // namespace gs
