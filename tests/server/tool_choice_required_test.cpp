// tool_choice "required" with several tools over HTTP on the real engine (the shakes model
// on the CPU, drafter on and off): the tool name is constrained to the declared ones, so
// every answer, streamed or not, starts a call with a declared name and never hands the
// forced "call:" markup to content (decision 0016).
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/shakes_http.h"

namespace gs {
namespace {

using json = nlohmann::json;

const std::set<std::string> kNames = {"get_weather", "get_time", "lookup_stock"};

json tools_json() {
  json tools = json::array();
  for (const auto& n : kNames) {
    tools.push_back({{"type", "function"},
                     {"function", {{"name", n}, {"parameters", {{"type", "object"},
                                                                {"properties", {{"city", {{"type", "string"}}}}}}}}}});
  }
  return tools;
}

// Two tools whose arguments have schemas the grammar holds: "get" takes an integer a in
// [-5, 5], "get_weather" a unit "C" or "F".
json int_and_enum_tools() {
  const json int_schema = json::parse(
      R"({"type":"object","properties":{"a":{"type":"integer","minimum":-5,"maximum":5}},"required":["a"],
          "additionalProperties":false})");
  const json enum_schema = json::parse(
      R"({"type":"object","properties":{"unit":{"enum":["C","F"]}},"required":["unit"],"additionalProperties":false})");
  json tools = json::array();
  tools.push_back({{"type", "function"}, {"function", {{"name", "get"}, {"parameters", int_schema}}}});
  tools.push_back({{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", enum_schema}}}});
  return tools;
}

// The answer's first tool call (name and arguments, a stream's pieces joined) and its
// finish_reason, from a whole or a streamed chat answer; has_call: a tool call was there.
struct FirstCall {
  bool has_call = false;
  std::string name, arguments, finish;
};
FirstCall first_call(const std::string& body, bool stream) {
  FirstCall fc;
  if (stream) {
    for (const json& c : test::sse_choice_chunks(body)) {
      const json& ch = c["choices"][0];
      if (ch["finish_reason"].is_string()) fc.finish = ch["finish_reason"];
      if (!ch["delta"].contains("tool_calls")) continue;
      fc.has_call = true;
      const json& f = ch["delta"]["tool_calls"][0]["function"];
      if (f.contains("name") && f["name"].is_string()) fc.name += f["name"].get<std::string>();
      if (f.contains("arguments") && f["arguments"].is_string()) fc.arguments += f["arguments"].get<std::string>();
    }
  } else {
    const json choice = json::parse(body)["choices"][0];
    fc.finish = choice["finish_reason"];
    if (choice["message"].contains("tool_calls")) {
      fc.has_call = true;
      fc.name = choice["message"]["tool_calls"][0]["function"]["name"];
      fc.arguments = choice["message"]["tool_calls"][0]["function"]["arguments"];
    }
  }
  return fc;
}

class RequiredToolChoice : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { server_.start(GetParam()); }
  void TearDown() override { server_.stop(); }

  json body(double temperature, int seed) const {
    return {{"messages", json::array({{{"role", "user"}, {"content", "Weather, time and a stock price for Oslo?"}}})},
            {"tools", tools_json()},
            {"tool_choice", "required"},
            {"max_tokens", 12},
            {"temperature", temperature},
            {"seed", seed}};
  }

  httplib::Result post(const json& b) const { return server_.post(b); }

  test::ShakesHttp server_;
};

TEST_P(RequiredToolChoice, TheCallAlwaysNamesADeclaredTool) {
  for (int seed = 0; seed <= 4; ++seed) {
    const double temperature = seed == 0 ? 0.0 : 1.0;  // greedy, then sampled
    // Whole response.
    auto r = post(body(temperature, seed));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json msg = json::parse(r->body)["choices"][0]["message"];
    ASSERT_TRUE(msg.contains("tool_calls") && !msg["tool_calls"].empty()) << "seed " << seed << ": " << r->body;
    EXPECT_TRUE(kNames.count(msg["tool_calls"][0]["function"]["name"].get<std::string>())) << r->body;
    const std::string content = msg["content"].is_string() ? msg["content"].get<std::string>() : "";
    EXPECT_EQ(content.find("call:"), std::string::npos) << r->body;

    // Streamed: the first call delta carries a declared name.
    json sb = body(temperature, seed);
    sb["stream"] = true;
    auto s = post(sb);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->status, 200) << s->body;
    std::string name, streamed_content;
    for (const json& c : test::sse_choice_chunks(s->body)) {
      const json& d = c["choices"][0]["delta"];
      if (d.contains("content") && d["content"].is_string()) streamed_content += d["content"].get<std::string>();
      if (d.contains("tool_calls") && name.empty()) name = d["tool_calls"][0]["function"].value("name", "");
    }
    EXPECT_TRUE(kNames.count(name)) << "seed " << seed << ": " << s->body;
    EXPECT_EQ(streamed_content.find("call:"), std::string::npos) << s->body;
    if (temperature == 0.0) {
      EXPECT_EQ(name, msg["tool_calls"][0]["function"]["name"].get<std::string>());
    }
  }
}

// max_tokens that ends the answer inside the forced call's name (the prompt wrote
// "<|tool_call>call:", the model had written "get_w"): no call, and no content either. The
// content was "call:get_w", the prompt's forced markup included. Whole and streamed, chat and
// the Responses API (whose message item held the same text). The Responses API takes no
// max_output_tokens below 16 (OpenAI's minimum, decision 0058), too many to cut these names:
// there each of these limits is the 400 naming max_output_tokens (the next test cuts longer
// names there).
TEST_P(RequiredToolChoice, ACallCutInItsNameLeavesNoContent) {
  for (int max_tokens = 1; max_tokens <= 6; ++max_tokens) {
    json b = body(0.0, 0);
    b["max_tokens"] = max_tokens;
    auto r = post(b);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json choice = json::parse(r->body)["choices"][0];
    const json& msg = choice["message"];
    const std::string content = msg["content"].is_string() ? msg["content"].get<std::string>() : "";
    EXPECT_EQ(content.find("call:"), std::string::npos) << "max_tokens " << max_tokens << ": " << r->body;
    if (msg.contains("tool_calls")) {
      for (const json& c : msg["tool_calls"]) EXPECT_TRUE(kNames.count(c["function"]["name"].get<std::string>()));
    } else {
      EXPECT_EQ(content, "") << "max_tokens " << max_tokens << ": " << r->body;
      EXPECT_EQ(choice["finish_reason"], "length") << r->body;
    }

    b["stream"] = true;
    auto s = post(b);
    ASSERT_TRUE(s);
    std::string streamed_content;
    for (const json& c : test::sse_choice_chunks(s->body)) {
      const json& d = c["choices"][0]["delta"];
      if (d.contains("content") && d["content"].is_string()) streamed_content += d["content"].get<std::string>();
    }
    EXPECT_EQ(streamed_content, content) << "max_tokens " << max_tokens << ": " << s->body;

    json rb = {{"input", "Weather, time and a stock price for Oslo?"},
               {"tool_choice", "required"},
               {"max_output_tokens", max_tokens},
               {"temperature", 0.0}};
    rb["tools"] = json::array();
    for (const json& t : tools_json()) {
      rb["tools"].push_back({{"type", "function"}, {"name", t["function"]["name"]}, {"parameters", t["function"]["parameters"]}});
    }
    auto rr = server_.post(rb, "/v1/responses");
    ASSERT_TRUE(rr);
    ASSERT_EQ(rr->status, 400) << rr->body;
    EXPECT_EQ(json::parse(rr->body)["error"]["param"], "max_output_tokens") << rr->body;
  }
}

// The Responses API's half of the test above: its smallest limit (16) cannot end inside the
// names of tools_json(), so two tools share a long prefix and the name is decided only at its
// end. An answer cut inside the name has no output items: neither a message holding the
// forced "call:" markup nor a function_call with a partial name.
TEST_P(RequiredToolChoice, AResponsesCallCutInItsNameLeavesNoItems) {
  const std::string prefix =
      "lookup_the_current_stock_price_of_a_listed_company_by_its_ticker_symbol_and_exchange_on_the_given_day_";
  const std::set<std::string> names = {prefix + "in_euros", prefix + "in_dollars"};
  json rb = {{"input", "Weather, time and a stock price for Oslo?"}, {"tool_choice", "required"}, {"temperature", 0.0}};
  rb["tools"] = json::array();
  for (const std::string& n : names) {
    rb["tools"].push_back({{"type", "function"}, {"name", n}, {"parameters", {{"type", "object"}}}});
  }
  int cut_in_name = 0;
  for (int max_output_tokens = 16; max_output_tokens <= 20; ++max_output_tokens) {
    rb["max_output_tokens"] = max_output_tokens;
    auto rr = server_.post(rb, "/v1/responses");
    ASSERT_TRUE(rr);
    ASSERT_EQ(rr->status, 200) << rr->body;
    const json resp = json::parse(rr->body);
    EXPECT_EQ(resp["status"], "incomplete") << rr->body;
    for (const json& item : resp["output"]) {
      EXPECT_NE(item["type"], "message") << "max_output_tokens " << max_output_tokens << ": " << rr->body;
      if (item["type"] == "function_call") {
        EXPECT_TRUE(names.count(item["name"].get<std::string>())) << rr->body;
      }
    }
    if (resp["output"].empty()) ++cut_in_name;
  }
  EXPECT_GT(cut_in_name, 0) << "no limit ended inside the name: the test shows nothing";
}

// A function declared without `parameters` takes none (OpenAI: an empty parameter list), so a
// forced call to it is `{}`, named or chosen under "required". Its arguments were left free
// and the shakes model wrote invented keys ({"harmon harmonafety...": null}).
TEST_P(RequiredToolChoice, AFunctionWithoutParametersIsCalledWithNone) {
  json tools = tools_json();
  tools.push_back({{"type", "function"}, {"function", {{"name", "ping"}, {"description", "no arguments"}}}});
  for (int seed : {0, 1, 2, 3}) {
    for (const json& choice : {json({{"type", "function"}, {"function", {{"name", "ping"}}}}), json("required")}) {
      json b = body(seed == 0 ? 0.0 : 2.0, seed);
      b["tools"] = choice.is_string() ? json::array({tools.back()}) : tools;
      b["tool_choice"] = choice;
      b["max_tokens"] = 16;
      b["parallel_tool_calls"] = false;  // the call ends the answer (at temperature 2 the model babbles on)
      for (const bool stream : {false, true}) {
        b["stream"] = stream;
        auto r = post(b);
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body;
        const FirstCall fc = first_call(r->body, stream);
        if (!stream) {
          ASSERT_TRUE(fc.has_call) << r->body;
        }
        EXPECT_EQ(fc.name, "ping") << "seed " << seed << ": " << r->body;
        EXPECT_EQ(fc.arguments, "{}") << "seed " << seed << " stream " << stream << ": " << r->body;
        EXPECT_EQ(fc.finish, "tool_calls") << r->body;
      }
    }
  }
}

// A forced call's first argument key is one the schema declares (decision 0016: the key
// constraint after NAME{). At temperature 2 the shakes model wrote junk keys there
// ({"NSleethoppingthuatientpos": null}); now the arguments always hold a declared key.
TEST_P(RequiredToolChoice, ForcedArgumentsBeginWithADeclaredKey) {
  json tools = json::array();
  tools.push_back({{"type", "function"},
                   {"function",
                    {{"name", "get_weather"},
                     {"parameters",
                      {{"type", "object"},
                       {"properties", {{"city", {{"type", "string"}}}, {"unit", {{"type", "string"}}}}},
                       {"required", json::array({"city"})}}}}}});
  for (int seed : {1, 116, 233, 7}) {
    for (const json& choice : {json("required"), json({{"type", "function"}, {"function", {{"name", "get_weather"}}}})}) {
      json b = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                {"tools", tools},
                {"tool_choice", choice},
                {"max_tokens", 20},
                {"temperature", 2.0},
                {"top_k", 0},
                {"seed", seed}};
      auto r = post(b);
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << r->body;
      const json msg = json::parse(r->body)["choices"][0]["message"];
      ASSERT_TRUE(msg.contains("tool_calls") && !msg["tool_calls"].empty()) << "seed " << seed << ": " << r->body;
      const json args = json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>());
      ASSERT_TRUE(args.is_object()) << r->body;
      EXPECT_TRUE(args.contains("city") || args.contains("unit")) << "seed " << seed << ": " << r->body;
    }
  }
}

// A forced call's arguments follow the tool's schema (decision 0027: the schema as a grammar
// in the call form). At temperature 2 the shakes model wrote junk values before; now every
// call's arguments are an object with the declared keys and values of the declared types.
TEST_P(RequiredToolChoice, ForcedArgumentsFollowTheSchema) {
  json tools = json::array();
  tools.push_back({{"type", "function"},
                   {"function",
                    {{"name", "get_weather"},
                     {"parameters",
                      json::parse(R"({"type":"object","properties":{"city":{"type":"string","maxLength":12},
                          "days":{"type":"integer"},"unit":{"enum":["C","F"]}},"required":["city","unit"],
                          "additionalProperties":false})")}}}});
  int whole = 0;
  for (int seed : {1, 116, 233, 7, 42}) {
    json b = {{"messages", json::array({{{"role", "user"}, {"content", "weather in Rome"}}})},
              {"tools", tools},
              {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
              {"max_tokens", 60},
              {"temperature", seed == 1 ? 0.0 : 2.0},
              {"top_k", 0},
              {"seed", seed}};
    auto r = post(b);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json choice = json::parse(r->body)["choices"][0];
    if (choice["finish_reason"] != "tool_calls") continue;  // cut by max_tokens
    ++whole;
    const json msg = choice["message"];
    ASSERT_TRUE(msg.contains("tool_calls") && !msg["tool_calls"].empty()) << r->body;
    const json args = json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>());
    ASSERT_TRUE(args.is_object()) << r->body;
    EXPECT_TRUE(args["city"].is_string() && args["city"].get<std::string>().size() <= 12 * 4) << r->body;
    EXPECT_TRUE(args["unit"] == "C" || args["unit"] == "F") << r->body;
    if (args.contains("days")) {
      EXPECT_TRUE(args["days"].is_number_integer()) << r->body;
    }
    for (const auto& item : args.items()) {
      EXPECT_TRUE(item.key() == "city" || item.key() == "days" || item.key() == "unit") << r->body;
    }
  }
  EXPECT_GT(whole, 0) << "no call finished";
}

// An enum of comparison operators: values with a '<' could not be written in the call form
// (the '<' might begin the closing delimiter), the constraint found no token, sampling went
// unconstrained and the arguments left the enum ({"op":"structed suspe..."}).
TEST_P(RequiredToolChoice, EnumValuesWithALessThanSignAreWritten) {
  json tools = json::array();
  tools.push_back({{"type", "function"},
                   {"function",
                    {{"name", "filter"},
                     {"parameters", json::parse(R"({"type":"object","properties":{"op":{"enum":["<","<=","a<b"]}},
                          "required":["op"],"additionalProperties":false})")}}}});
  int whole = 0;
  for (int seed : {1, 2, 3, 4, 5, 6}) {
    json b = {{"messages", json::array({{{"role", "user"}, {"content", "less than"}}})},
              {"tools", tools},
              {"tool_choice", "required"},
              {"reasoning_effort", "none"},
              {"max_tokens", 40},
              {"temperature", 1.0},
              {"seed", seed}};
    auto r = post(b);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json msg = json::parse(r->body)["choices"][0]["message"];
    ASSERT_TRUE(msg.contains("tool_calls") && !msg["tool_calls"].empty()) << r->body;
    const json args = json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>());
    ++whole;
    EXPECT_TRUE(args["op"] == "<" || args["op"] == "<=" || args["op"] == "a<b") << r->body;
  }
  EXPECT_EQ(whole, 6);
}

// "required" with several tools: the chosen function's arguments follow its schema too, not
// only its first key. Before, `{"messages":[{"role":"user","content":"hi"}],"tools":[two
// functions with an integer a],"tool_choice":"required","temperature":0}` gave
// {"a":"afetyafety..."} (a string for the integer), and sampled runs junk values.
TEST_P(RequiredToolChoice, SeveralToolsArgumentsFollowTheChosenSchema) {
  const json tools = int_and_enum_tools();
  int whole = 0;
  for (int seed : {0, 1, 2, 3, 4, 5}) {
    json b = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
              {"tools", tools},
              {"tool_choice", "required"},
              {"parallel_tool_calls", false},
              {"max_tokens", 40},
              {"temperature", seed == 0 ? 0.0 : 1.5},
              {"seed", seed}};
    for (bool stream : {false, true}) {
      b["stream"] = stream;
      auto r = post(b);
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << r->body;
      const FirstCall fc = first_call(r->body, stream);
      if (!stream) {
        ASSERT_TRUE(fc.has_call) << r->body;
      }
      const std::string& name = fc.name;
      const std::string& arguments = fc.arguments;
      if (fc.finish != "tool_calls") continue;  // cut by max_tokens
      ++whole;
      const json args = json::parse(arguments);
      if (name == "get") {
        ASSERT_TRUE(args.contains("a")) << r->body;
        ASSERT_TRUE(args["a"].is_number_integer()) << r->body;
        EXPECT_TRUE(args["a"].get<int64_t>() >= -5 && args["a"].get<int64_t>() <= 5) << r->body;
        EXPECT_EQ(args.size(), 1u) << r->body;
      } else {
        ASSERT_EQ(name, "get_weather") << r->body;
        EXPECT_TRUE(args == json({{"unit", "C"}}) || args == json({{"unit", "F"}})) << r->body;
      }
    }
  }
  EXPECT_GT(whole, 6) << "too few calls finished";
}

// All the calls of a whole or streamed answer (a stream's pieces joined by index), its content
// and its finish_reason.
struct Answer {
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
  std::string content, finish;
};
Answer answer_of(const std::string& body, bool stream) {
  Answer a;
  if (stream) {
    for (const json& c : test::sse_choice_chunks(body)) {
      const json& ch = c["choices"][0];
      if (ch["finish_reason"].is_string()) a.finish = ch["finish_reason"];
      const json& d = ch["delta"];
      if (d.contains("content") && d["content"].is_string()) a.content += d["content"].get<std::string>();
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
  if (choice["message"]["content"].is_string()) a.content = choice["message"]["content"];
  if (choice["message"].contains("tool_calls")) {
    for (const json& t : choice["message"]["tool_calls"]) a.calls.emplace_back(t["function"]["name"], t["function"]["arguments"]);
  }
  return a;
}

// A forced call's answer is calls and nothing else, as OpenAI's (decision 0016, "After the
// forced call"): after a call's closer the engine allows only an end of generation, or, where
// parallel_tool_calls permits, the opener of another call of the kind the choice allows
// ("required": any tool; named: that one), whose arguments follow its schema too. At temperature
// 2 the shakes model wrote prose after the call ("content": "...KING HENRY..."), and a later
// call's name and arguments were free.
TEST_P(RequiredToolChoice, NothingButCallsFollowAForcedCall) {
  const json tools = int_and_enum_tools();
  const auto valid = [](const std::string& name, const json& args) {
    if (name == "get") {
      return args.size() == 1 && args.contains("a") && args["a"].is_number_integer() && args["a"].get<int64_t>() >= -5 &&
             args["a"].get<int64_t>() <= 5;
    }
    return name == "get_weather" && (args == json({{"unit", "C"}}) || args == json({{"unit", "F"}}));
  };
  // The shakes model ends its turn after a call when it may; a bias toward the call's closer and
  // opener makes it close the call and call again wherever the mask lets it (parallel calls), to
  // test the later calls too.
  const auto opener = server_.tokenizer().find_token("<|tool_call>");
  const auto closer = server_.tokenizer().find_token("<tool_call|>");
  ASSERT_TRUE(opener.has_value() && closer.has_value());
  int several = 0;
  for (const json& choice : {json("required"), json({{"type", "function"}, {"function", {{"name", "get_weather"}}}})}) {
    for (const auto& [parallel, bias] : {std::pair{true, 0}, std::pair{false, 0}, std::pair{true, 100}, std::pair{false, 100}}) {
      for (int seed = 1; seed <= (bias == 0 ? 5 : 2); ++seed) {
        json b = {{"messages", json::array({{{"role", "user"}, {"content", "Weather in Oslo, twice?"}}})},
                  {"tools", tools},
                  {"tool_choice", choice},
                  {"parallel_tool_calls", parallel},
                  {"max_tokens", 64},
                  {"temperature", 2.0},
                  {"seed", seed}};
        if (bias != 0) b["logit_bias"] = {{std::to_string(*opener), bias}, {std::to_string(*closer), bias}};
        for (const bool stream : {false, true}) {
          b["stream"] = stream;
          auto r = post(b);
          ASSERT_TRUE(r);
          ASSERT_EQ(r->status, 200) << r->body;
          const std::string what = choice.dump() + " parallel " + std::to_string(parallel) + " bias " +
                                   std::to_string(bias) + " seed " + std::to_string(seed) + " stream " +
                                   std::to_string(stream) + ": " + r->body;
          const Answer a = answer_of(r->body, stream);
          EXPECT_EQ(a.content, "") << what;
          ASSERT_FALSE(a.calls.empty()) << what;
          if (!parallel) {
            EXPECT_EQ(a.calls.size(), 1u) << what;
          }
          if (parallel && bias != 0) {
            EXPECT_GT(a.calls.size(), 1u) << what;
          }
          if (a.calls.size() > 1) ++several;
          EXPECT_TRUE(a.finish == "tool_calls" || a.finish == "length") << what;
          for (size_t i = 0; i < a.calls.size(); ++i) {
            const auto& [name, arguments] = a.calls[i];
            if (choice.is_object()) {
              EXPECT_EQ(name, "get_weather") << what;
            }
            // A call cut by max_tokens is the last one; every other is whole and follows its schema.
            if (i + 1 == a.calls.size() && a.finish == "length") continue;
            const json args = json::parse(arguments, nullptr, false);
            EXPECT_TRUE(valid(name, args)) << "call " << i << " " << name << " " << arguments << " in " << what;
          }
        }
      }
    }
  }
  std::printf("[ info ] %d answers held several calls\n", several);
  EXPECT_GT(several, 0);
}

// A forced choice after an assistant prefill that left a call open (in its arguments, in its
// name): the answer goes on with that call where the choice allows it, as under auto (decisions
// 0048, 0065), its arguments under the function's schema; a named choice that the prefill's
// call contradicts still makes its own call. The prompt ends with the prefill's text. Before
// (decision 0067) the forced opener was written after the prefill, so the model read a call
// opened inside the open one and the answer was a fresh call, the prefill's dropped.
TEST_P(RequiredToolChoice, ACallThePrefillOpenedIsContinued) {
  const json get_weather_choice = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  const json get_choice = {{"type", "function"}, {"function", {{"name", "get"}}}};
  struct Case {
    std::string prefill;
    json choice;
    std::string name;  // the call the answer must hold
  };
  const std::vector<Case> cases = {
      {"<|tool_call>call:get_weather{unit:", "required", "get_weather"},
      {"<|tool_call>call:get_weather{unit:", get_weather_choice, "get_weather"},
      {"<|tool_call>call:get_w", "required", "get_weather"},
      {"<|tool_call>call:get_w", get_weather_choice, "get_weather"},
      {"<|tool_call>call:get_weather{unit:", get_choice, "get"},  // contradicted: its own call
  };
  for (const Case& c : cases) {
    const json messages = json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}},
                                       {{"role", "assistant"}, {"content", c.prefill}}});
    json b = {{"messages", messages}, {"tools", int_and_enum_tools()}, {"tool_choice", c.choice},
              {"max_tokens", 40}, {"parallel_tool_calls", false}};
    const std::string what = "prefill '" + c.prefill + "' tool_choice " + c.choice.dump();
    auto t = server_.post(b, "/apply-template");
    ASSERT_TRUE(t);
    ASSERT_EQ(t->status, 200) << t->body;
    const std::string prompt = json::parse(t->body)["prompt"];
    const bool continued = c.name == "get_weather";
    EXPECT_EQ(prompt.ends_with(c.prefill), continued) << what << ": " << prompt;
    for (int seed = 1; seed <= 3; ++seed) {
      b["temperature"] = seed == 1 ? 0.0 : 1.5;
      b["seed"] = seed;
      for (const bool stream : {false, true}) {
        b["stream"] = stream;
        auto r = post(b);
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body;
        const FirstCall fc = first_call(r->body, stream);
        ASSERT_TRUE(fc.has_call) << what << ": " << r->body;
        EXPECT_EQ(fc.name, c.name) << what << ": " << r->body;
        EXPECT_EQ(fc.finish, "tool_calls") << what << ": " << r->body;
        const json args = json::parse(fc.arguments, nullptr, false);
        if (c.name == "get_weather") {
          EXPECT_TRUE(args == json({{"unit", "C"}}) || args == json({{"unit", "F"}})) << what << ": " << r->body;
        } else {
          EXPECT_TRUE(args.is_object() && args.contains("a")) << what << ": " << r->body;
        }
      }
    }
  }
  // The Messages route's "any": the same continuation.
  json anthropic_tools = json::array();
  for (const json& t : int_and_enum_tools()) {
    anthropic_tools.push_back({{"name", t["function"]["name"]}, {"input_schema", t["function"]["parameters"]}});
  }
  const json m = {{"model", "shakes"},
                  {"max_tokens", 40},
                  {"temperature", 0.0},
                  {"messages", json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}},
                                            {{"role", "assistant"}, {"content", "<|tool_call>call:get_weather{unit:"}}})},
                  {"tools", anthropic_tools},
                  {"tool_choice", {{"type", "any"}}}};
  auto ma = server_.post(m, "/v1/messages");
  ASSERT_TRUE(ma);
  ASSERT_EQ(ma->status, 200) << ma->body;
  int uses = 0;
  const json answer = json::parse(ma->body);
  for (const json& block : answer["content"]) {
    if (block["type"] != "tool_use") continue;
    ++uses;
    EXPECT_EQ(block["name"], "get_weather") << ma->body;
    EXPECT_TRUE(block["input"] == json({{"unit", "C"}}) || block["input"] == json({{"unit", "F"}})) << ma->body;
  }
  EXPECT_EQ(uses, 1) << ma->body;
}

INSTANTIATE_TEST_SUITE_P(Drafter, RequiredToolChoice, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "DrafterOn" : "DrafterOff"; });

}  // namespace
}  // namespace gs
