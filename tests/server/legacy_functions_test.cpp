// OpenAI's deprecated function-calling form (decision 0030): `functions` / `function_call`
// read as tools / tool_choice, history turns with `function_call` and role "function", and
// answers with message.function_call and finish_reason "function_call", streamed or not.
#include <gtest/gtest.h>

#include <string>

#include "server/api_request.h"
#include "server/request_plan.h"
#include "server_fixture.h"

namespace gs::server {
namespace {

using nlohmann::json;

const json kWeatherFn = json::parse(R"({"name":"get_weather","description":"Weather of a city",
  "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}})");
const json kTimeFn = json::parse(R"({"name":"get_time","parameters":{"type":"object","properties":{"city":{"type":"string"}}}})");

json user_body(json extra = json::object()) {
  json body{{"messages", json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}})}, {"max_tokens", 100}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

Result<ChatCompletionRequest> parse(const json& body) { return parse_chat_request(body, RequestDefaults{}); }

// The same request in the tools form.
json as_tools(const json& fn) { return json{{"type", "function"}, {"function", fn}}; }

TEST(LegacyFunctions, FunctionsAreTools) {
  auto legacy = parse(user_body({{"functions", json::array({kWeatherFn, kTimeFn})}}));
  ASSERT_TRUE(legacy.ok()) << legacy.status().to_string();
  auto current = parse(user_body({{"tools", json::array({as_tools(kWeatherFn), as_tools(kTimeFn)})}}));
  ASSERT_TRUE(current.ok()) << current.status().to_string();
  EXPECT_TRUE(legacy->legacy_functions);
  EXPECT_FALSE(current->legacy_functions);
  ASSERT_EQ(legacy->tools.size(), 2u);
  EXPECT_EQ(legacy->tools[0].name, "get_weather");
  EXPECT_EQ(legacy->tools[0].description, "Weather of a city");
  EXPECT_EQ(legacy->tools[0].parameters, kWeatherFn["parameters"]);
  EXPECT_EQ(legacy->tool_choice, ToolChoice::kAuto);
  // The legacy answer has room for one call: the first complete call ends the output.
  EXPECT_FALSE(legacy->parallel_tool_calls);
  EXPECT_TRUE(current->parallel_tool_calls);
  // The model reads the same prompt either way.
  auto legacy_prompt = render_chat_request(*legacy);
  auto current_prompt = render_chat_request(*current);
  ASSERT_TRUE(legacy_prompt.ok() && current_prompt.ok());
  EXPECT_EQ(legacy_prompt->text, current_prompt->text);
}

TEST(LegacyFunctions, FunctionCallIsToolChoice) {
  const json fns = json::array({kWeatherFn, kTimeFn});
  struct Case {
    json function_call;
    json tool_choice;
  };
  const Case cases[] = {
      {"auto", "auto"},
      {"none", "none"},
      {{{"name", "get_time"}}, {{"type", "function"}, {"function", {{"name", "get_time"}}}}},
  };
  for (const Case& c : cases) {
    auto legacy = parse(user_body({{"functions", fns}, {"function_call", c.function_call}}));
    ASSERT_TRUE(legacy.ok()) << c.function_call.dump() << ": " << legacy.status().to_string();
    auto current = parse(user_body(
        {{"tools", json::array({as_tools(kWeatherFn), as_tools(kTimeFn)})}, {"tool_choice", c.tool_choice}}));
    ASSERT_TRUE(current.ok()) << current.status().to_string();
    EXPECT_EQ(legacy->tool_choice, current->tool_choice) << c.function_call.dump();
    EXPECT_EQ(legacy->tool_choice_name, current->tool_choice_name) << c.function_call.dump();
    auto a = render_chat_request(*legacy);
    auto b = render_chat_request(*current);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->text, b->text) << c.function_call.dump();
  }
  // A call forced by name ends the prompt inside the call, as a named tool_choice does.
  auto named = parse(user_body({{"functions", fns}, {"function_call", {{"name", "get_time"}}}}));
  ASSERT_TRUE(named.ok());
  EXPECT_TRUE(render_chat_request(*named)->text.ends_with("<|tool_call>call:get_time{"));
  // function_call "none" without functions, or "auto", asks for nothing.
  EXPECT_TRUE(parse(user_body({{"function_call", "none"}})).ok());
  EXPECT_TRUE(parse(user_body({{"function_call", "auto"}})).ok());
}

TEST(LegacyFunctions, BadLegacyFieldsAreNamed) {
  const json fns = json::array({kWeatherFn});
  struct Case {
    json extra;
    std::string param;
    std::string says;
  };
  const Case cases[] = {
      // Both forms: which list would a choice name?
      {{{"functions", fns}, {"tools", json::array({as_tools(kTimeFn)})}}, "tools", "deprecated form"},
      {{{"functions", fns}, {"tool_choice", "auto"}}, "tool_choice", "cannot be combined with functions"},
      {{{"function_call", "auto"}, {"tools", json::array({as_tools(kTimeFn)})}}, "tools", "function_call"},
      {{{"function_call", "none"}, {"tool_choice", "none"}}, "tool_choice", "cannot be combined"},
      // The legacy form has no "required".
      {{{"functions", fns}, {"function_call", "required"}}, "function_call", "'auto', 'none' or a function"},
      {{{"functions", fns}, {"function_call", {{"name", "nope"}}}}, "function_call", "not in functions"},
      {{{"functions", fns}, {"function_call", json::object()}}, "function_call.name", "required"},
      {{{"functions", fns}, {"function_call", 5}}, "function_call", "a string or an object"},
      {{{"function_call", {{"name", "get_weather"}}}}, "function_call", "functions is empty"},
      {{{"functions", "x"}}, "functions", "must be an array"},
      {{{"functions", json::array({{{"description", "no name"}}})}}, "functions[0].name", "non-empty"},
      {{{"functions", json::array({{{"name", "bad name"}}})}}, "functions[0].name", "1-128 characters"},
      {{{"functions", json::array({kWeatherFn, kWeatherFn})}}, "functions[1].name", "declared twice"},
  };
  for (const Case& c : cases) {
    auto r = parse(user_body(c.extra));
    ASSERT_FALSE(r.ok()) << c.extra.dump();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.extra.dump();
    EXPECT_EQ(error_param(r.status().message()), c.param) << r.status().message();
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
  }
}

// A legacy client replays its turns as it got them: the assistant's function_call and the
// function's answer (role "function", named), read as a tool call and its response.
TEST(LegacyFunctions, HistoryTurnsInTheLegacyForm) {
  json legacy = user_body({{"functions", json::array({kWeatherFn})}});
  legacy["messages"].push_back({{"role", "assistant"},
                                {"content", nullptr},
                                {"function_call", {{"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}}}});
  legacy["messages"].push_back({{"role", "function"}, {"name", "get_weather"}, {"content", "sunny, 21 C"}});
  json current = user_body({{"tools", json::array({as_tools(kWeatherFn)})}});
  current["messages"].push_back(
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls", json::array({{{"id", "c1"},
                                    {"type", "function"},
                                    {"function", {{"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}}}}})}});
  current["messages"].push_back({{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "sunny, 21 C"}});
  auto a = parse(legacy);
  auto b = parse(current);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  ASSERT_EQ(a->messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(a->messages[2].role, text::ChatRole::kTool);
  auto pa = render_chat_request(*a);
  auto pb = render_chat_request(*b);
  ASSERT_TRUE(pa.ok()) << pa.status().to_string();
  ASSERT_TRUE(pb.ok()) << pb.status().to_string();
  EXPECT_EQ(pa->text, pb->text);
  EXPECT_NE(pa->text.find("sunny, 21 C"), std::string::npos);

  json bad = legacy;
  bad["messages"][2].erase("name");
  auto r = parse(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(error_param(r.status().message()), "messages[2].name") << r.status().message();
  bad = legacy;
  bad["messages"][1]["tool_calls"] = current["messages"][1]["tool_calls"];
  r = parse(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(error_param(r.status().message()), "messages[1].function_call") << r.status().message();
  bad = legacy;
  bad["messages"][0]["function_call"] = {{"name", "get_weather"}};
  r = parse(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(error_param(r.status().message()), "messages[0].function_call") << r.status().message();
  bad = legacy;
  bad["messages"][1]["function_call"] = {{"arguments", "{}"}};
  r = parse(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(error_param(r.status().message()), "messages[1].function_call.name") << r.status().message();
}

// Over HTTP: the answer to a functions request holds message.function_call (no tool_calls)
// and finish_reason "function_call"; streamed, the call comes as delta.function_call pieces.
TEST(LegacyFunctions, AnswersInTheLegacyFormStreamedOrNot) {
  test::LiveServer s;
  s.answer("<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>"
           "<|tool_call>call:get_time{city:<|\"|>Paris<|\"|>}<tool_call|><|tool_response>");
  const json body = user_body({{"functions", json::array({kWeatherFn, kTimeFn})}});
  auto r = s.post("/v1/chat/completions", body.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json whole = json::parse(r->body);
  const json& choice = whole["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "function_call");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  EXPECT_FALSE(choice["message"].contains("tool_calls")) << whole.dump();
  EXPECT_EQ(choice["message"]["function_call"]["name"], "get_weather");
  EXPECT_EQ(json::parse(choice["message"]["function_call"]["arguments"].get<std::string>()),
            json::parse(R"({"city":"Paris"})"));

  json streamed_body = body;
  streamed_body["stream"] = true;
  r = s.post("/v1/chat/completions", streamed_body.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::string name, args, finish;
  int n_named = 0;
  for (const std::string& e : test::sse_payloads(r->body)) {
    if (e == "[DONE]") continue;
    const json c = json::parse(e);
    ASSERT_EQ(c["choices"].size(), 1u);
    const json& d = c["choices"][0]["delta"];
    EXPECT_FALSE(d.contains("tool_calls")) << e;
    if (d.contains("function_call")) {
      if (d["function_call"].contains("name")) {
        name += d["function_call"]["name"].get<std::string>();
        ++n_named;
      }
      args += d["function_call"].value("arguments", "");
    }
    if (c["choices"][0]["finish_reason"].is_string()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(n_named, 1);
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(json::parse(args), json::parse(R"({"city":"Paris"})"));
  EXPECT_EQ(finish, "function_call");

  // Without a call the answer is plain content, finish "stop", in either form.
  s.answer("It is sunny.");
  r = s.post("/v1/chat/completions", body.dump());
  ASSERT_TRUE(r);
  const json plain = json::parse(r->body);
  EXPECT_EQ(plain["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(plain["choices"][0]["message"]["content"], "It is sunny.");
  EXPECT_FALSE(plain["choices"][0]["message"].contains("function_call"));

  // Both forms: a 400 naming the field, before anything is generated.
  const int64_t steps = s.runner->n_steps();
  json both = body;
  both["tools"] = json::array({as_tools(kTimeFn)});
  r = s.post("/v1/chat/completions", both.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "tools") << r->body;
  EXPECT_EQ(s.runner->n_steps(), steps);
}

}  // namespace
}  // namespace gs::server
