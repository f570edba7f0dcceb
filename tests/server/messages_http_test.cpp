// POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API) over a live
// server with a scripted model and the real Gemma 4 text layer: text, thinking and tool_use
// blocks whole and streamed (the same content both ways), stop reasons, usage, tool results
// in the prompt, errors in Anthropic's shape (validation, auth, routes, loading, draining,
// context), and hostile bodies that leave the server serving.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "server/shakes_http.h"
#include "server_fixture.h"

namespace gs {
namespace {

using nlohmann::json;
using test::LiveServer;
using test::ServerFixtureOptions;

const json kWeatherTool = json::parse(R"({"name":"get_weather","description":"Weather of a city",
  "input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}})");

// The text of the prompt the model read last, markup included.
std::string last_prompt(const LiveServer& s) {
  std::vector<int32_t> ids;
  {
    std::lock_guard<std::mutex> lock(s.script->mu);
    ids = s.script->last_prompt;
  }
  auto text = s.tok->decode(ids, text::DecodeOptions{.render_special = true});
  EXPECT_TRUE(text.ok());
  return text.ok() ? *text : std::string();
}

json body(const std::string& user, json extra = json::object()) {
  json b{{"model", "claude-test"}, {"max_tokens", 200}, {"messages", json::array({{{"role", "user"}, {"content", user}}})}};
  for (auto& [k, v] : extra.items()) b[k] = v;
  return b;
}

httplib::Result post(const LiveServer& s, const json& b, const std::string& path = "/v1/messages",
                     httplib::Headers headers = {}) {
  return s.post(path, b.dump(), std::move(headers));
}

json whole(const LiveServer& s, const json& b) {
  auto r = post(s, b);
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, 200) << r->body;
  return json::parse(r->body);
}

// An Anthropic error body of `status` and `type`.
void expect_anthropic_error(const httplib::Result& r, int status, const std::string& type, const std::string& what) {
  ASSERT_TRUE(r) << what;
  EXPECT_EQ(r->status, status) << what << ": " << r->body;
  json e = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(e.is_object()) << what << ": " << r->body;
  EXPECT_EQ(e["type"], "error") << what << ": " << r->body;
  EXPECT_EQ(e["error"]["type"], type) << what << ": " << r->body;
  EXPECT_TRUE(e["error"]["message"].is_string() && !e["error"]["message"].get<std::string>().empty()) << r->body;
}

// A stream's events, checked for Anthropic's order, and the message they build up.
struct Streamed {
  std::vector<std::string> names;
  json message;  // message_start's message with the blocks and message_delta applied
  bool ordered = true;
  std::string why;
};

Streamed stream(const LiveServer& s, json b) {
  b["stream"] = true;
  auto r = post(s, b);
  Streamed out;
  EXPECT_TRUE(r);
  if (!r) return out;
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  std::map<int, std::string> partial_json;
  int open = -1;
  auto fail = [&](const std::string& why) {
    if (out.ordered) out.why = why;
    out.ordered = false;
  };
  size_t pos = 0;
  std::string name;
  const std::string& text = r->body;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("event: ", 0) == 0) name = line.substr(7);
    if (line.rfind("data: ", 0) != 0) continue;
    const json e = json::parse(line.substr(6));
    if (e["type"] != name) fail("event " + name + " carries type " + e["type"].dump());
    out.names.push_back(name);
    if (name == "message_start") {
      if (out.names.size() != 1) fail("message_start is not first");
      out.message = e["message"];
    } else if (name == "content_block_start") {
      const int index = e["index"];
      if (open != -1 || index != static_cast<int>(out.message["content"].size())) fail("block start out of order");
      open = index;
      out.message["content"].push_back(e["content_block"]);
    } else if (name == "content_block_delta") {
      const int index = e["index"];
      if (index != open) fail("delta outside its block");
      json& block = out.message["content"][index];
      const json& d = e["delta"];
      if (d["type"] == "text_delta") block["text"] = block["text"].get<std::string>() + d["text"].get<std::string>();
      if (d["type"] == "thinking_delta") {
        block["thinking"] = block["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      }
      if (d["type"] == "input_json_delta") partial_json[index] += d["partial_json"].get<std::string>();
    } else if (name == "content_block_stop") {
      if (e["index"] != open) fail("stop of a block that is not open");
      if (partial_json.count(open)) out.message["content"][open]["input"] = json::parse(partial_json[open]);
      open = -1;
    } else if (name == "message_delta") {
      if (open != -1) fail("message_delta with a block open");
      out.message["stop_reason"] = e["delta"]["stop_reason"];
      out.message["stop_sequence"] = e["delta"]["stop_sequence"];
      for (auto& [k, v] : e["usage"].items()) out.message["usage"][k] = v;
    }
  }
  if (out.names.empty() || out.names.back() != "message_stop") fail("message_stop is not last");
  return out;
}

TEST(MessagesHttp, TextAnswerWholeAndStreamed) {
  LiveServer s;
  s.answer("Paris is the capital.");
  const json m = whole(s, body("What is the capital of France?"));
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["model"], "shakes-test");
  EXPECT_EQ(m["id"].get<std::string>().rfind("msg_", 0), 0u) << m.dump();
  EXPECT_EQ(m["content"], json::parse(R"([{"type":"text","text":"Paris is the capital."}])"));
  EXPECT_EQ(m["stop_reason"], "end_turn");
  EXPECT_TRUE(m["stop_sequence"].is_null());
  EXPECT_GT(m["usage"]["output_tokens"].get<int>(), 0);
  const int prompt = m["usage"]["input_tokens"].get<int>() + m["usage"]["cache_read_input_tokens"].get<int>();
  EXPECT_GT(prompt, 5);

  Streamed st = stream(s, body("What is the capital of France?"));
  EXPECT_TRUE(st.ordered) << st.why;
  EXPECT_EQ(st.names[1], "ping");
  EXPECT_EQ(st.message["content"], m["content"]);
  EXPECT_EQ(st.message["stop_reason"], "end_turn");
  EXPECT_EQ(st.message["usage"]["output_tokens"], m["usage"]["output_tokens"]);
  EXPECT_EQ(st.message["usage"]["input_tokens"].get<int>() + st.message["usage"]["cache_read_input_tokens"].get<int>(),
            prompt);

  // count_tokens gives the prompt's size, without generating.
  auto c = post(s, json{{"model", "x"}, {"messages", body("What is the capital of France?")["messages"]}},
                "/v1/messages/count_tokens");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 200) << c->body;
  EXPECT_EQ(json::parse(c->body), (json{{"input_tokens", prompt}}));
}

TEST(MessagesHttp, ThinkingIsAThinkingBlock) {
  LiveServer s;
  s.answer("<|channel>thought\nThe capital of France is Paris.<channel|>Paris.");
  const json b = body("Capital of France?", {{"max_tokens", 2048}, {"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}});
  const json m = whole(s, b);
  ASSERT_EQ(m["content"].size(), 2u) << m.dump();
  EXPECT_EQ(m["content"][0],
            json::parse(R"({"type":"thinking","thinking":"The capital of France is Paris.","signature":""})"));
  EXPECT_EQ(m["content"][1], json::parse(R"({"type":"text","text":"Paris."})"));
  // Thinking on: the prompt asks for it (<|think|> in the system turn).
  const std::string prompt = last_prompt(s);
  EXPECT_NE(prompt.find("<|think|>"), std::string::npos) << prompt;
  Streamed st = stream(s, b);
  EXPECT_TRUE(st.ordered) << st.why;
  EXPECT_EQ(st.message["content"], m["content"]);
}

TEST(MessagesHttp, ToolUseBlocksAndStopReason) {
  LiveServer s;
  s.answer("Let me look.<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>");
  const json b = body("Weather in Paris?", {{"tools", json::array({kWeatherTool})}});
  const json m = whole(s, b);
  ASSERT_EQ(m["content"].size(), 2u) << m.dump();
  EXPECT_EQ(m["content"][0], json::parse(R"({"type":"text","text":"Let me look."})"));
  const json& call = m["content"][1];
  EXPECT_EQ(call["type"], "tool_use");
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(call["input"], json::parse(R"({"city":"Paris"})"));
  EXPECT_EQ(call["id"].get<std::string>().rfind("toolu_", 0), 0u) << call.dump();
  EXPECT_EQ(m["stop_reason"], "tool_use");
  Streamed st = stream(s, b);
  EXPECT_TRUE(st.ordered) << st.why;
  ASSERT_EQ(st.message["content"].size(), 2u) << st.message.dump();
  EXPECT_EQ(st.message["content"][0], m["content"][0]);
  EXPECT_EQ(st.message["content"][1]["input"], call["input"]);
  EXPECT_EQ(st.message["content"][1]["name"], "get_weather");
  EXPECT_EQ(st.message["stop_reason"], "tool_use");
  // The tools reach the prompt as declarations.
  EXPECT_NE(last_prompt(s).find("declaration:get_weather"), std::string::npos);
}

// The round trip an agent makes: the call it got back, then its result, in the next request.
TEST(MessagesHttp, ToolResultReachesThePrompt) {
  LiveServer s;
  s.answer("It is sunny in Paris.");
  json b = body("Weather in Paris?", {{"tools", json::array({kWeatherTool})}});
  b["messages"].push_back(json::parse(R"({"role":"assistant","content":[
    {"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris"}}]})"));
  b["messages"].push_back(json::parse(R"({"role":"user","content":[
    {"type":"tool_result","tool_use_id":"toolu_01","content":"sunny, 24 C"}]})"));
  const json m = whole(s, b);
  EXPECT_EQ(m["content"][0]["text"], "It is sunny in Paris.");
  const std::string prompt = last_prompt(s);
  EXPECT_NE(prompt.find("call:get_weather{city:"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("response:get_weather{value:"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("sunny, 24 C"), std::string::npos) << prompt;
  // A result for a call that was not made is refused before anything runs.
  b["messages"][2]["content"][0]["tool_use_id"] = "toolu_99";
  auto r = post(s, b);
  expect_anthropic_error(r, 400, "invalid_request_error", "unmatched tool_result");
  EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find("messages[2].content[0].tool_use_id"),
            std::string::npos)
      << r->body;
}

// A past call's input is an object in the body, not a string as OpenAI's arguments are: its
// integers reach the prompt as the client wrote them, as the same call's arguments string does
// on the chat route. One beyond 64 bits printed as the double nlohmann read
// (1.8446744073709552e+19); one between 2^53 and 2^63 was already exact, a float stays a float.
TEST(MessagesHttp, ToolUseInputIntegersRenderAsTheChatRouteRendersThem) {
  LiveServer s;
  s.answer("ok");
  const std::string input =
      R"({"ids":[18446744073709551616,-9223372036854775809,9007199254740993],"n":7,)"
      R"("deep":{"x":123456789012345678901234567890},"f":1e20,"g":2.5})";
  const std::string tool = R"({"name":"f","input_schema":{"type":"object","properties":{}}})";
  const std::string anthropic =
      R"({"max_tokens":8,"tools":[)" + tool + R"(],"messages":[{"role":"user","content":"q"},)"
      R"({"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":)" + input + "}]},"
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"done"}]}]})";
  for (const char* path : {"/v1/messages", "/v1/messages/count_tokens"}) {
    auto r = s.post(path, anthropic);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << path << ": " << r->body;
  }
  const std::string prompt = last_prompt(s);
  for (const char* digits : {"18446744073709551616", "-9223372036854775809", "9007199254740993",
                             "123456789012345678901234567890", "n:7", "f:1e+20", "g:2.5"}) {
    EXPECT_NE(prompt.find(digits), std::string::npos) << digits << " in " << prompt;
  }
  EXPECT_EQ(prompt.find("e+19"), std::string::npos) << prompt;
  EXPECT_EQ(prompt.find("e+29"), std::string::npos) << prompt;
  // The chat route's prompt for the same history, the input as the call's arguments string.
  const std::string chat =
      R"({"max_tokens":8,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object",)"
      R"("properties":{}}}}],"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,)"
      R"("tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"f","arguments":)" +
      json(input).dump() + R"(}}]},{"role":"tool","tool_call_id":"toolu_1","content":"done"}]})";
  auto r = s.post("/v1/chat/completions", chat);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(last_prompt(s), prompt);
  // The count is that prompt's.
  r = s.post("/v1/messages/count_tokens", anthropic);
  ASSERT_TRUE(r);
  std::vector<int32_t> ids;
  {
    std::lock_guard<std::mutex> lock(s.script->mu);
    ids = s.script->last_prompt;
  }
  EXPECT_EQ(json::parse(r->body)["input_tokens"], ids.size()) << r->body;
}

TEST(MessagesHttp, ForcedToolEndsThePromptInsideTheCall) {
  LiveServer s;
  s.answer("city:<|\"|>Rome<|\"|>}<tool_call|>");
  const json b = body("Weather?", {{"tools", json::array({kWeatherTool})},
                                   {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}}}});
  const json m = whole(s, b);
  const std::string prompt = last_prompt(s);
  EXPECT_TRUE(prompt.ends_with("<|tool_call>call:get_weather{")) << prompt;
  ASSERT_FALSE(m["content"].empty()) << m.dump();
  const json& call = m["content"].back();
  EXPECT_EQ(call["type"], "tool_use") << m.dump();
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(m["stop_reason"], "tool_use");
}

TEST(MessagesHttp, StopSequenceAndMaxTokens) {
  LiveServer s;
  s.answer("Hello there. END of the answer.");
  const json m = whole(s, body("Hi", {{"stop_sequences", {"END", "never"}}}));
  EXPECT_EQ(m["content"][0]["text"], "Hello there. ");
  EXPECT_EQ(m["stop_reason"], "stop_sequence");
  EXPECT_EQ(m["stop_sequence"], "END");
  Streamed st = stream(s, body("Hi", {{"stop_sequences", {"END"}}}));
  EXPECT_TRUE(st.ordered) << st.why;
  EXPECT_EQ(st.message["stop_reason"], "stop_sequence");
  EXPECT_EQ(st.message["stop_sequence"], "END");
  EXPECT_EQ(st.message["content"], m["content"]);

  s.answer("la", /*endless=*/true);
  const json cut = whole(s, body("Hi", {{"max_tokens", 3}}));
  EXPECT_EQ(cut["stop_reason"], "max_tokens");
  EXPECT_EQ(cut["usage"]["output_tokens"], 3);
  Streamed cs = stream(s, body("Hi", {{"max_tokens", 3}}));
  EXPECT_TRUE(cs.ordered) << cs.why;
  EXPECT_EQ(cs.message["stop_reason"], "max_tokens");
}

TEST(MessagesHttp, ValidationErrorsAreAnthropicErrors) {
  LiveServer s;
  s.answer("x");
  json no_max = body("Hi");
  no_max.erase("max_tokens");
  auto r = post(s, no_max);
  expect_anthropic_error(r, 400, "invalid_request_error", "no max_tokens");
  EXPECT_EQ(json::parse(r->body)["error"]["message"], "max_tokens is required");
  expect_anthropic_error(s.post("/v1/messages", "{not json"), 400, "invalid_request_error", "not JSON");
  expect_anthropic_error(s.post("/v1/messages", "[]"), 400, "invalid_request_error", "not an object");
  json image = body("x");
  image["messages"][0]["content"] = json::parse(R"([{"type":"text","text":"What is this?"},
    {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}])");
  r = post(s, image);
  expect_anthropic_error(r, 400, "invalid_request_error", "image");
  EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find("text only"), std::string::npos);
  json role = body("x");
  role["messages"][0]["role"] = "system";
  expect_anthropic_error(post(s, role), 400, "invalid_request_error", "system role");
  expect_anthropic_error(post(s, json{{"messages", json::array()}}, "/v1/messages/count_tokens"), 400,
                         "invalid_request_error", "count_tokens without messages");
  // Routes: another method, an unknown path below /v1/messages.
  auto get = s.get("/v1/messages");
  expect_anthropic_error(get, 405, "invalid_request_error", "GET /v1/messages");
  EXPECT_EQ(get->get_header_value("Allow"), "POST");
  expect_anthropic_error(s.post("/v1/messages/batches", "{}"), 404, "not_found_error", "batches");
  // The OpenAI routes keep their own shape.
  auto chat = s.post("/v1/chat/completions", "{}");
  ASSERT_TRUE(chat);
  EXPECT_TRUE(json::parse(chat->body).contains("error"));
  EXPECT_FALSE(json::parse(chat->body).contains("type"));
  test::expect_healthy(s);
}

TEST(MessagesHttp, ApiKeyFromEitherHeaderAndAnthropic401) {
  ServerFixtureOptions o;
  o.keys = {"sk-test-1"};
  LiveServer s(o);
  s.answer("ok");
  const json b = body("Hi", {{"max_tokens", 5}});
  auto none = post(s, b);
  expect_anthropic_error(none, 401, "authentication_error", "no key");
  EXPECT_NE(json::parse(none->body)["error"]["message"].get<std::string>().find("x-api-key"), std::string::npos);
  expect_anthropic_error(post(s, b, "/v1/messages", {{"x-api-key", "sk-wrong"}}), 401, "authentication_error",
                         "wrong key");
  expect_anthropic_error(post(s, b, "/v1/messages/count_tokens"), 401, "authentication_error", "count_tokens, no key");
  for (const httplib::Headers& h : {httplib::Headers{{"x-api-key", "sk-test-1"}},
                                    httplib::Headers{{"Authorization", "Bearer sk-test-1"}},
                                    // An SDK given both a key and another bearer token.
                                    httplib::Headers{{"Authorization", "Bearer other"}, {"x-api-key", "sk-test-1"}},
                                    httplib::Headers{{"Authorization", "Bearer sk-test-1"}, {"x-api-key", "other"}}}) {
    auto r = post(s, b, "/v1/messages", h);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
  // Anthropic's SDKs call their beta API as /v1/messages?beta=true (Claude Code does).
  for (const char* path : {"/v1/messages?beta=true", "/v1/messages/count_tokens?beta=true"}) {
    auto r = post(s, b, path, {{"x-api-key", "sk-test-1"}});
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
    expect_anthropic_error(post(s, b, path), 401, "authentication_error", path);
  }
  // The OpenAI routes answer 401 in their own shape still.
  auto chat = s.post("/v1/chat/completions", "{}");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 401);
  EXPECT_EQ(json::parse(chat->body)["error"]["type"], "authentication_error");
  EXPECT_FALSE(json::parse(chat->body).contains("type"));
}

TEST(MessagesHttp, LoadingDrainingAndContextErrors) {
  {
    ServerFixtureOptions o;
    o.load_model = false;
    LiveServer s(o);
    auto r = post(s, body("Hi"));
    expect_anthropic_error(r, 503, "overloaded_error", "loading");
    EXPECT_EQ(r->get_header_value("Retry-After"), "1");
    expect_anthropic_error(post(s, body("Hi"), "/v1/messages/count_tokens"), 503, "overloaded_error",
                           "count_tokens while loading");
  }
  {
    ServerFixtureOptions o;
    o.n_ctx = 64;
    LiveServer s(o);
    std::string longer;
    for (int i = 0; i < 100; ++i) longer += " the king";
    auto r = post(s, body(longer));
    expect_anthropic_error(r, 400, "invalid_request_error", "too long");
    EXPECT_EQ(json::parse(r->body)["error"]["message"].get<std::string>().rfind("prompt is too long: ", 0), 0u)
        << r->body;
    s.http->set_draining();
    expect_anthropic_error(post(s, body("Hi")), 503, "overloaded_error", "draining");
    // count_tokens makes nothing: it answers while the server drains.
    auto c = post(s, body("Hi"), "/v1/messages/count_tokens");
    ASSERT_TRUE(c);
    EXPECT_EQ(c->status, 200) << c->body;
  }
}

TEST(MessagesHttp, QueueFullIsRateLimitError) {
  ServerFixtureOptions o;
  o.n_slots = 1;
  o.queue_size = 0;
  o.step_delay = std::chrono::milliseconds(5);
  LiveServer s(o);
  s.answer("", /*endless=*/true);
  std::thread holder([&] { post(s, body("x", {{"max_tokens", 400}})); });
  for (int i = 0; i < 200 && s.engine->metrics().busy_slots == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto r = post(s, body("x", {{"max_tokens", 3}}));
  expect_anthropic_error(r, 429, "rate_limit_error", "queue full");
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  holder.join();
  test::expect_healthy(s);
}

// Nothing a client sends takes the server down: every hostile body gets a 4xx in
// Anthropic's shape, and the server still answers.
TEST(MessagesHttp, HostileBodiesGet400s) {
  LiveServer s;
  s.answer("fine");
  const char* bodies[] = {
      "",
      "null",
      "\"x\"",
      R"({"max_tokens":1e400,"messages":[{"role":"user","content":"x"}]})",
      R"({"max_tokens":-1,"messages":[{"role":"user","content":"x"}]})",
      R"({"max_tokens":18446744073709551615,"messages":[{"role":"user","content":"x"}]})",
      R"({"max_tokens":5,"messages":[null]})",
      R"({"max_tokens":5,"messages":[{"role":null,"content":"x"}]})",
      R"({"max_tokens":5,"messages":[{"role":"user","content":[null]}]})",
      R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":5}]}]})",
      R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":5}]}]})",
      R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":{}}]}]})",
      R"({"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":"{}"}]}]})",
      R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[null]})",
      R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":5,"input_schema":{}}]})",
      R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":null}})",
      R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"enabled","budget_tokens":"x"}})",
      R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"system":[null]})",
      R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"stop_sequences":[null]})",
      R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"temperature":"hot"})",
  };
  for (const char* b : bodies) {
    for (const char* path : {"/v1/messages", "/v1/messages/count_tokens"}) {
      auto r = s.post(path, b);
      ASSERT_TRUE(r) << b;
      if (std::string(path) == "/v1/messages/count_tokens" && r->status == 200) continue;  // generation fields unread
      expect_anthropic_error(r, 400, "invalid_request_error", std::string(path) + " " + b);
    }
  }
  std::string deep = R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"metadata":)";
  for (int i = 0; i < 200; ++i) deep += "[";
  for (int i = 0; i < 200; ++i) deep += "]";
  deep += "}";
  expect_anthropic_error(s.post("/v1/messages", deep), 400, "invalid_request_error", "deep nesting");
  test::expect_healthy(s);
  EXPECT_EQ(whole(s, body("still there?"))["content"][0]["text"], "fine");
}

// On the real engine (the shakes model on the CPU): tool_choice "any" with several tools
// always gives a tool_use block naming a declared tool, whole and streamed.
TEST(MessagesShakes, AnyToolChoiceAlwaysCallsADeclaredTool) {
  test::ShakesHttp server;
  server.start(/*drafter=*/true);
  json tools = json::array();
  for (const char* name : {"get_weather", "get_time"}) {
    tools.push_back({{"name", name},
                     {"input_schema", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}});
  }
  const json b{{"max_tokens", 16},
               {"temperature", 0},
               {"tools", tools},
               {"tool_choice", {{"type", "any"}}},
               {"messages", json::array({{{"role", "user"}, {"content", "Weather and time in Oslo?"}}})}};
  auto r = server.post(b, "/v1/messages");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json m = json::parse(r->body);
  bool called = false;
  for (const auto& block : m["content"]) {
    if (block["type"] != "tool_use") continue;
    called = true;
    EXPECT_TRUE(block["name"] == "get_weather" || block["name"] == "get_time") << r->body;
    EXPECT_TRUE(block["input"].is_object()) << r->body;
  }
  EXPECT_TRUE(called) << r->body;
  EXPECT_TRUE(m["stop_reason"] == "tool_use" || m["stop_reason"] == "max_tokens") << r->body;
  json sb = b;
  sb["stream"] = true;
  auto st = server.post(sb, "/v1/messages");
  ASSERT_TRUE(st);
  ASSERT_EQ(st->status, 200);
  EXPECT_NE(st->body.find("\"type\":\"tool_use\""), std::string::npos) << st->body;
  EXPECT_NE(st->body.find("event: message_stop"), std::string::npos) << st->body;
  server.stop();
}

// On the real engine: output_config.format (Anthropic's structured output) constrains the
// text block to JSON that follows the schema, whole and streamed; the beta's output_format
// does the same. It was dropped, and the shakes model answered with free Shakespeare.
TEST(MessagesShakes, OutputConfigFormatGivesJsonThatFollowsTheSchema) {
  test::ShakesHttp server;
  server.start(/*drafter=*/true);
  const json schema = json::parse(R"({"type":"object","properties":{"name":{"type":"string","maxLength":8},
    "n":{"type":"integer","minimum":0,"maximum":99}},"required":["name","n"],"additionalProperties":false})");
  const json format{{"type", "json_schema"}, {"schema", schema}};
  for (const json& extra : {json{{"output_config", {{"format", format}, {"effort", "low"}}}},
                            json{{"output_format", format}}}) {
    json b{{"max_tokens", 96},
           {"temperature", 0},
           {"thinking", {{"type", "disabled"}}},
           {"messages", json::array({{{"role", "user"}, {"content", "Name and number?"}}})}};
    for (auto& [k, v] : extra.items()) b[k] = v;
    auto r = server.post(b, "/v1/messages");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json m = json::parse(r->body);
    ASSERT_EQ(m["content"].size(), 1u) << r->body;
    ASSERT_EQ(m["content"][0]["type"], "text") << r->body;
    const std::string text = m["content"][0]["text"];
    const json value = json::parse(text, nullptr, false);
    ASSERT_TRUE(value.is_object()) << text;
    EXPECT_EQ(value.size(), 2u) << text;
    EXPECT_TRUE(value["name"].is_string() && value["name"].get<std::string>().size() <= 8) << text;
    EXPECT_TRUE(value["n"].is_number_integer() && value["n"] >= 0 && value["n"] <= 99) << text;
    EXPECT_EQ(m["stop_reason"], "end_turn") << r->body;
    json sb = b;
    sb["stream"] = true;
    auto st = server.post(sb, "/v1/messages");
    ASSERT_TRUE(st);
    ASSERT_EQ(st->status, 200);
    std::string streamed;
    for (size_t pos = 0; (pos = st->body.find("data: ", pos)) != std::string::npos;) {
      const size_t end = st->body.find('\n', pos);
      const json e = json::parse(st->body.substr(pos + 6, end - pos - 6));
      if (e["type"] == "content_block_delta" && e["delta"]["type"] == "text_delta") streamed += e["delta"]["text"];
      pos = end;
    }
    EXPECT_EQ(streamed, text) << st->body;
  }
  server.stop();
}

}  // namespace
}  // namespace gs
