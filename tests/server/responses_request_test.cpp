// Responses API bodies translated into chat requests (decision 0032): input items, tools,
// tool_choice, text.format, reasoning, the echoed fields, and errors that name the
// Responses field; no body throws.
#include <gtest/gtest.h>

#include "server/request_plan.h"
#include "server/responses_request.h"

namespace gs {
namespace {

using nlohmann::json;
using server::parse_responses_request;
using server::RequestDefaults;
using server::responses_error_param;
using server::translate_responses_request;
using server::ToolChoice;

const json kTool = json::parse(R"({"type":"function","name":"get_weather","description":"Weather of a city",
  "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true})");

Result<server::ResponsesRequest> parse(const json& body) { return parse_responses_request(body, RequestDefaults{}); }

// The error message of a refused body (and that it was refused with kInvalidArgument).
std::string error_of(const json& body) {
  auto r = parse(body);
  EXPECT_FALSE(r.ok()) << body.dump();
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  return r.status().message();
}

TEST(ResponsesRequest, StringInputIsOneUserMessageAfterTheInstructions) {
  auto r = parse({{"model", "m"}, {"input", "Hello"}, {"instructions", "Be brief."}, {"max_output_tokens", 17},
                  {"temperature", 0.5}, {"top_p", 0.9}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->chat.messages.size(), 2u);
  EXPECT_EQ(r->chat.messages[0].role, text::ChatRole::kSystem);
  EXPECT_EQ(r->chat.messages[0].content, "Be brief.");
  EXPECT_EQ(r->chat.messages[1].role, text::ChatRole::kUser);
  EXPECT_EQ(r->chat.messages[1].content, "Hello");
  EXPECT_EQ(r->chat.gen.max_tokens, 17);
  EXPECT_FLOAT_EQ(r->chat.gen.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r->chat.gen.sampling.top_p, 0.9f);
  EXPECT_FALSE(r->chat.gen.stream);
  EXPECT_EQ(r->chat.tool_choice, ToolChoice::kNone);
  EXPECT_EQ(r->echo["instructions"], "Be brief.");
  EXPECT_EQ(r->echo["max_output_tokens"], 17);
  EXPECT_EQ(r->echo["tools"], json::array());
  EXPECT_EQ(r->echo["tool_choice"], "auto");
  EXPECT_EQ(r->echo["store"], false);
  EXPECT_EQ(r->echo["text"]["format"]["type"], "text");
}

TEST(ResponsesRequest, ItemsBecomeTheChatTurns) {
  json input = json::parse(R"([
    {"role":"developer","content":"Use tools."},
    {"type":"message","role":"user","content":[{"type":"input_text","text":"Weather in "},{"type":"input_text","text":"Oslo?"}]},
    {"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"I should call the tool."}]},
    {"type":"function_call","id":"fc_1","call_id":"call_a","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
    {"type":"function_call","call_id":"call_b","name":"get_weather","arguments":"{\"city\":\"Bergen\"}"},
    {"type":"function_call_output","call_id":"call_a","output":"rain"},
    {"type":"function_call_output","call_id":"call_b","output":[{"type":"input_text","text":"sun"}]},
    {"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Rain and sun.","annotations":[]}]},
    {"role":"user","content":"Thanks"}
  ])");
  auto r = parse({{"input", input}, {"tools", json::array({kTool})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto& m = r->chat.messages;
  ASSERT_EQ(m.size(), 7u);
  EXPECT_EQ(m[0].role, text::ChatRole::kDeveloper);
  EXPECT_EQ(m[1].content_parts.size() + m[1].content.size() > 0, true);
  EXPECT_EQ(m[1].content, "Weather in Oslo?");
  EXPECT_EQ(m[2].role, text::ChatRole::kAssistant);
  EXPECT_EQ(m[2].reasoning_content, "I should call the tool.");
  ASSERT_EQ(m[2].tool_calls.size(), 2u);
  EXPECT_EQ(m[2].tool_calls[0].id, "call_a");
  EXPECT_EQ(m[2].tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(m[2].tool_calls[1].arguments_json), json({{"city", "Bergen"}}));
  EXPECT_EQ(m[3].role, text::ChatRole::kTool);
  EXPECT_EQ(m[3].tool_call_id, "call_a");
  EXPECT_EQ(m[3].content, "rain");
  EXPECT_EQ(m[4].content, "sun");
  EXPECT_EQ(m[5].role, text::ChatRole::kAssistant);
  EXPECT_EQ(m[5].content, "Rain and sun.");
  EXPECT_TRUE(m[5].reasoning_content.empty());
  EXPECT_EQ(m[6].content, "Thanks");
  ASSERT_EQ(r->chat.tools.size(), 1u);
  EXPECT_EQ(r->chat.tools[0].name, "get_weather");
  EXPECT_EQ(r->chat.tool_choice, ToolChoice::kAuto);
}

TEST(ResponsesRequest, ACallJoinsTheAssistantTextBeforeIt) {
  json input = json::parse(R"([{"role":"user","content":"Hi"},
    {"role":"assistant","content":"Let me look."},
    {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{}"},
    {"type":"function_call_output","call_id":"c1","output":"sun"}])");
  auto r = parse({{"input", input}, {"tools", json::array({kTool})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->chat.messages.size(), 3u);
  EXPECT_EQ(r->chat.messages[1].content, "Let me look.");
  EXPECT_EQ(r->chat.messages[1].tool_calls.size(), 1u);
}

// Every function_call item needs its function_call_output, as OpenAI's API has it ("No tool
// output found for function call ..."): a call left unanswered (last, or followed by other
// items) was accepted, and the prompt held the call without a result.
TEST(ResponsesRequest, ACallWithoutItsOutputIsRefused) {
  const json call = json::parse(R"({"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{}"})");
  const json call2 = json::parse(R"({"type":"function_call","call_id":"c2","name":"get_weather","arguments":"{}"})");
  const json out2 = json::parse(R"({"type":"function_call_output","call_id":"c2","output":"rain"})");
  const json user = json::parse(R"({"role":"user","content":"Hi"})");
  for (const json& input : {json::array({user, call}), json::array({user, call, user}),
                            json::array({user, call, call2, out2, user})}) {
    const std::string m = error_of({{"input", input}, {"tools", json::array({kTool})}});
    EXPECT_NE(m.find("input[1].call_id: no tool output found for function call 'c1'"), std::string::npos)
        << input.dump() << " -> " << m;
    EXPECT_EQ(responses_error_param(m), "input[1].call_id") << m;
  }
}

TEST(ResponsesRequest, ToolChoiceTextFormatAndReasoning) {
  auto r = parse({{"input", "x"}, {"tools", json::array({kTool})},
                  {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}},
                  {"parallel_tool_calls", false}, {"stream", true}, {"reasoning", {{"effort", "none"}}}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->chat.tool_choice, ToolChoice::kNamed);
  EXPECT_EQ(r->chat.tool_choice_name, "get_weather");
  EXPECT_FALSE(r->chat.parallel_tool_calls);
  EXPECT_TRUE(r->chat.gen.stream);
  EXPECT_FALSE(r->chat.enable_thinking);
  EXPECT_EQ(r->echo["parallel_tool_calls"], false);
  EXPECT_EQ(r->echo["tool_choice"]["name"], "get_weather");

  for (const char* s : {"auto", "none", "required"}) {
    auto c = parse({{"input", "x"}, {"tools", json::array({kTool})}, {"tool_choice", s}});
    ASSERT_TRUE(c.ok()) << s << ": " << c.status().to_string();
  }
  auto high = parse({{"input", "x"}, {"reasoning", {{"effort", "high"}, {"summary", "auto"}}}});
  ASSERT_TRUE(high.ok());
  EXPECT_TRUE(high->chat.enable_thinking);

  auto js = parse({{"input", "x"}, {"text", {{"format", {{"type", "json_schema"}, {"name", "city"}, {"strict", true},
                   {"schema", {{"type", "object"}, {"properties", {{"name", {{"type", "string"}}}}}}}}}}}});
  ASSERT_TRUE(js.ok()) << js.status().to_string();
  EXPECT_NE(js->chat.gen.json_grammar, nullptr);
  EXPECT_EQ(js->echo["text"]["format"]["name"], "city");
  auto jo = parse({{"input", "x"}, {"text", {{"format", {{"type", "json_object"}}}}}});
  ASSERT_TRUE(jo.ok());
  EXPECT_NE(jo->chat.gen.json_grammar, nullptr);
  auto plain = parse({{"input", "x"}, {"text", {{"format", {{"type", "text"}}}, {"verbosity", "low"}}}});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->chat.gen.json_grammar, nullptr);
}

TEST(ResponsesRequest, StoreMetadataAndUnknownFieldsAreAccepted) {
  auto r = parse({{"input", "x"}, {"store", true}, {"metadata", {{"k", "v"}}}, {"user", "u"},
                  {"include", json::array({"reasoning.encrypted_content"})}, {"truncation", "auto"},
                  {"background", false}, {"previous_response_id", nullptr}, {"service_tier", "auto"},
                  {"top_logprobs", 0}, {"max_tool_calls", 4}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->echo["store"], false);
  EXPECT_EQ(r->echo["metadata"]["k"], "v");
}

// max_tool_calls is read once, by the translation (it was read there to check it and again
// when the chat request was made), and the chat request takes it from there.
TEST(ResponsesRequest, MaxToolCallsIsReadOnceByTheTranslation) {
  auto t = translate_responses_request({{"input", "x"}, {"max_tool_calls", 3}});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->max_tool_calls, std::optional<int32_t>(3));
  auto none = translate_responses_request({{"input", "x"}, {"max_tool_calls", nullptr}});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->max_tool_calls, std::nullopt);
  auto r = parse({{"input", "x"}, {"max_tool_calls", 3}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->chat.max_tool_calls, 3);
  EXPECT_EQ(r->echo["max_tool_calls"], 3);
  EXPECT_FALSE(translate_responses_request({{"input", "x"}, {"max_tool_calls", 0}}).ok());
}

TEST(ResponsesRequest, RefusalsNameTheResponsesField) {
  struct Case {
    json body;
    const char* param;
    const char* words;
  };
  const std::vector<Case> cases = {
      {json::object(), "input", "required"},
      {{{"input", 5}}, "input", "string or an array"},
      {{{"input", json::array()}}, "input", "empty"},
      {{{"input", "x"}, {"previous_response_id", "resp_1"}}, "previous_response_id", "not stored"},
      {{{"input", "x"}, {"background", true}}, "background", "not supported"},
      {{{"input", "x"}, {"conversation", "c"}}, "conversation", "not stored"},
      {{{"input", json::array({{{"role", "tool"}, {"content", "x"}}})}}, "input[0].role", "user, system"},
      {{{"input", json::array({{{"role", "user"}}})}}, "input[0].content", "required"},
      {{{"input", json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_image"}, {"image_url", "u"}}})}}})}},
       "input[0].content[0].type", "text only"},
      {{{"input", json::array({{{"type", "web_search_call"}, {"id", "w"}}})}}, "input[0].type", "not supported"},
      {{{"input", json::array({7})}}, "input[0]", "object"},
      {{{"input", json::array({{{"type", "function_call"}, {"name", "f"}}})}}, "input[0].call_id", "required"},
      {{{"input", json::array({{{"type", "function_call"}, {"call_id", "c"}, {"name", "f"}, {"arguments", "{not json"}}})}},
       "input[0].arguments", ""},
      {{{"input", json::array({{{"type", "function_call_output"}, {"call_id", "c"}}})}}, "input[0].output", "required"},
      {{{"input", json::array({{{"type", "function_call_output"}, {"call_id", "c"}, {"output", "o"}}})}},
       "input[0].call_id", "answers no function_call"},
      {{{"input", "x"}, {"tools", json::array({{{"type", "web_search"}}})}}, "tools[0].type", "web_search"},
      {{{"input", "x"}, {"tools", json::array({{{"type", "function"}, {"name", "bad name"}}})}}, "tools[0].name", ""},
      {{{"input", "x"}, {"tools", json::array({kTool})}, {"tool_choice", {{"type", "function"}, {"name", "other"}}}},
       "tool_choice", "not in tools"},
      {{{"input", "x"}, {"tools", json::array({kTool})}, {"tool_choice", {{"type", "web_search_preview"}}}},
       "tool_choice.type", "not supported"},
      {{{"input", "x"}, {"tool_choice", "sometimes"}}, "tool_choice", "sometimes"},
      {{{"input", "x"}, {"max_output_tokens", 0}}, "max_output_tokens", ""},
      {{{"input", "x"}, {"temperature", 9}}, "temperature", ""},
      {{{"input", "x"}, {"reasoning", {{"effort", "huge"}}}}, "reasoning.effort", ""},
      {{{"input", "x"}, {"reasoning", "high"}}, "reasoning", "object"},
      {{{"input", "x"}, {"text", {{"format", {{"type", "yaml"}}}}}}, "text.format.type", "yaml"},
      {{{"input", "x"}, {"text", {{"format", {{"type", "json_schema"}, {"name", "n"}}}}}}, "text.format.schema", "required"},
      {{{"input", "x"}, {"text", {{"format", {{"type", "json_schema"}, {"schema", {{"type", 7}}}}}}}},
       "text.format.schema*", ""},
      {{{"input", "x"}, {"stream", "yes"}}, "stream", ""},
      // Taken and not used: still typed; log-probabilities asked for are refused, not empty.
      {{{"input", "x"}, {"top_logprobs", 3}}, "top_logprobs", "not returned"},
      {{{"input", "x"}, {"top_logprobs", "3"}}, "top_logprobs", ""},
      {{{"input", "x"}, {"include", json::array({"message.output_text.logprobs"})}}, "include[0]", "not returned"},
      {{{"input", "x"}, {"include", "reasoning.encrypted_content"}}, "include", "array"},
      {{{"input", "x"}, {"include", json::array({7})}}, "include[0]", "string"},
      {{{"input", "x"}, {"truncation", "sometimes"}}, "truncation", "auto"},
      {{{"input", "x"}, {"max_tool_calls", "many"}}, "max_tool_calls", ""},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(c.body);
    // A param ending in '*' is a prefix (the schema compiler names the keyword at fault).
    const std::string param = c.param;
    if (param.ends_with('*')) {
      EXPECT_TRUE(responses_error_param(message).starts_with(param.substr(0, param.size() - 1))) << message;
    } else {
      EXPECT_EQ(responses_error_param(message), param) << c.body.dump() << " -> " << message;
    }
    EXPECT_NE(message.find(c.words), std::string::npos) << c.body.dump() << " -> " << message;
    EXPECT_EQ(message.find("messages"), std::string::npos) << message;
    EXPECT_EQ(message.find("response_format"), std::string::npos) << message;
  }
}

// `user` is a string and `metadata` an object of at most 16 string values (keys up to 64
// characters, values up to 512), as OpenAI checks them; both were taken unchecked ("user": 5
// and "metadata": "x" passed, and metadata was echoed back as sent).
TEST(ResponsesRequest, UserAndMetadataAreTypeChecked) {
  json sixteen = json::object();
  for (int i = 0; i < 16; ++i) sixteen["k" + std::to_string(i)] = "v";
  std::string wide_value;
  for (int i = 0; i < 512; ++i) wide_value += "\u00e9";  // 512 characters, 1024 bytes
  for (const json& good : {json{{"user", "u"}}, json{{"user", nullptr}}, json{{"metadata", nullptr}},
                           json{{"metadata", sixteen}}, json{{"metadata", {{std::string(64, 'k'), wide_value}}}}}) {
    json body{{"input", "x"}};
    body.update(good);
    auto r = parse(body);
    EXPECT_TRUE(r.ok()) << body.dump() << ": " << r.status().to_string();
  }
  json seventeen = sixteen;
  seventeen["k16"] = "v";
  struct Case {
    json extra;
    const char* param;
    const char* words;
  };
  const std::vector<Case> cases = {
      {{{"user", 5}}, "user", "must be a string"},
      {{{"user", {{"id", "u"}}}}, "user", "must be a string"},
      {{{"metadata", "x"}}, "metadata", "must be an object"},
      {{{"metadata", json::array({"x"})}}, "metadata", "must be an object"},
      {{{"metadata", {{"tier", 3}}}}, "metadata.tier", "must be a string"},
      {{{"metadata", {{"a b", true}}}}, "metadata", "key \"a b\""},
      {{{"metadata", seventeen}}, "metadata", "at most 16"},
      {{{"metadata", {{std::string(65, 'k'), "v"}}}}, "metadata", "at most 64"},
      {{{"metadata", {{"k", std::string(513, 'v')}}}}, "metadata.k", "at most 512"},
  };
  for (const Case& c : cases) {
    json body{{"input", "x"}};
    body.update(c.extra);
    const std::string message = error_of(body);
    EXPECT_EQ(responses_error_param(message), c.param) << body.dump().substr(0, 200) << " -> " << message;
    EXPECT_NE(message.find(c.words), std::string::npos) << message;
  }
}

// OpenAI's tags and hints on /v1/responses are type-checked: service_tier a string or null,
// prompt_cache_key and safety_identifier strings, text.verbosity low / medium / high,
// reasoning.summary auto / concise / detailed or null. They were taken unchecked.
TEST(ResponsesRequest, TagsAndHintsAreTypeChecked) {
  for (const json& good :
       {json{{"service_tier", "auto"}, {"prompt_cache_key", "conv-1"}, {"safety_identifier", "h"}},
        json{{"service_tier", nullptr}, {"prompt_cache_key", nullptr}, {"safety_identifier", nullptr}},
        json{{"text", {{"verbosity", "low"}}}, {"reasoning", {{"summary", "auto"}}}},
        json{{"text", {{"format", {{"type", "text"}}}, {"verbosity", nullptr}}},
             {"reasoning", {{"effort", "low"}, {"summary", "detailed"}}}},
        json{{"reasoning", {{"summary", nullptr}}}, {"include", json::array({"reasoning.encrypted_content"})}},
        json{{"reasoning", {{"summary", "concise"}}}, {"text", {{"verbosity", "high"}}}}}) {
    json body{{"input", "x"}};
    body.update(good);
    auto r = parse(body);
    EXPECT_TRUE(r.ok()) << body.dump() << ": " << r.status().to_string();
  }
  struct Case {
    json extra;
    const char* param;
  };
  const std::vector<Case> cases = {
      {{{"service_tier", 1}}, "service_tier"},
      {{{"prompt_cache_key", json::array({"k"})}}, "prompt_cache_key"},
      {{{"safety_identifier", false}}, "safety_identifier"},
      {{{"text", {{"verbosity", "verbose"}}}}, "text.verbosity"},
      {{{"text", {{"verbosity", 3}}}}, "text.verbosity"},
      {{{"reasoning", {{"summary", "short"}}}}, "reasoning.summary"},
      {{{"reasoning", {{"summary", true}}}}, "reasoning.summary"},
      {{{"include", "reasoning.encrypted_content"}}, "include"},
      {{{"include", json::array({7})}}, "include[0]"},
  };
  for (const Case& c : cases) {
    json body{{"input", "x"}};
    body.update(c.extra);
    const std::string message = error_of(body);
    EXPECT_EQ(responses_error_param(message), c.param) << body.dump() << " -> " << message;
    EXPECT_NE(message.find(std::string(c.param) + " must be"), std::string::npos) << message;
  }
}

// A call_id given twice in one turn is refused naming the item that repeats it and the one it
// repeats, as the client sent them (input[k].call_id). The message named tool_calls[0], a path of
// the chat request this route builds, which the client never sent.
TEST(ResponsesRequest, ADuplicateCallIdNamesTheClientsItems) {
  json input = json::parse(R"([{"role":"user","content":"Weather in Oslo and Bergen?"},
    {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
    {"type":"function_call","call_id":"c2","name":"get_weather","arguments":"{\"city\":\"Bergen\"}"},
    {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Bergen\"}"},
    {"type":"function_call_output","call_id":"c1","output":"snow"},
    {"type":"function_call_output","call_id":"c2","output":"rain"}])");
  const std::string message = error_of({{"input", input}, {"instructions", "Be brief."}, {"tools", json::array({kTool})}});
  EXPECT_EQ(message, "input[3].call_id 'c1' is also the call_id of input[1]");
  EXPECT_EQ(responses_error_param(message), "input[3].call_id");
  EXPECT_EQ(message.find("tool_calls"), std::string::npos) << message;
}

// A message item's content must not be empty: OpenAI refuses an empty string or an empty array
// of parts (400 naming input[k].content); it was accepted and rendered as an empty turn. Other
// items' empty text stays (a function_call_output with empty output, an empty text part).
TEST(ResponsesRequest, AMessageWithEmptyContentIsRefused) {
  for (const char* role : {"user", "system", "developer", "assistant"}) {
    for (const json& content : {json(""), json::array()}) {
      json input = json::array({{{"role", "user"}, {"content", "Hi"}}, {{"type", "message"}, {"role", role}, {"content", content}}});
      const std::string message = error_of({{"input", input}});
      EXPECT_EQ(responses_error_param(message), "input[1].content") << role << " " << content.dump() << " -> " << message;
      EXPECT_NE(message.find("empty"), std::string::npos) << message;
    }
  }
  auto ok = parse({{"input", json::parse(R"([{"role":"user","content":[{"type":"input_text","text":""}]},
    {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{}"},
    {"type":"function_call_output","call_id":"c1","output":""}])")}});
  EXPECT_TRUE(ok.ok()) << ok.status().to_string();
}

// The top-level input as one string is one user message: an empty one is refused as an empty
// message content is (400 naming input); it was accepted and rendered as an empty user turn.
// With instructions too, and whitespace still counts as text.
TEST(ResponsesRequest, AnEmptyInputStringIsRefused) {
  for (const json& body : {json{{"input", ""}}, json{{"input", ""}, {"instructions", "Be brief."}}}) {
    const std::string message = error_of(body);
    EXPECT_EQ(responses_error_param(message), "input") << body.dump() << " -> " << message;
    EXPECT_NE(message.find("empty"), std::string::npos) << message;
  }
  auto blank = parse({{"input", " "}});
  EXPECT_TRUE(blank.ok()) << blank.status().to_string();
}

// Planning errors (the renderer's) are renamed too: a tool output that answers no call.
TEST(ResponsesRequest, RenameErrorMapsChatPaths) {
  json input = json::parse(R"([{"role":"user","content":"Hi"},
    {"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
    {"type":"function_call_output","call_id":"c1","output":"ok"}])");
  auto r = parse({{"input", input}, {"instructions", "sys"}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  auto renamed = [&](const std::string& m) {
    return r->translation.rename_error(Status(StatusCode::kInvalidArgument, m)).message();
  };
  EXPECT_EQ(renamed("messages[0].content: bad"), "instructions.content: bad");
  EXPECT_EQ(renamed("messages[1].content: bad"), "input[0].content: bad");
  EXPECT_EQ(renamed("messages[2].tool_calls[0].function.arguments: bad"), "input[1].arguments: bad");
  EXPECT_EQ(renamed("messages[3].tool_call_id 'c9' answers no call"), "input[2].call_id 'c9' answers no call");
  EXPECT_EQ(renamed("messages[3].content must be text"), "input[2].output must be text");
  EXPECT_EQ(renamed("messages[9].content: bad"), "messages[9].content: bad");
  EXPECT_EQ(renamed("messages[3].tool_call_id \"x\" matches no tool call of messages[2]"),
            "input[2].call_id \"x\" matches no tool call of input[1]");
  EXPECT_EQ(renamed("tools[3].function.parameters: bad"), "tools[3].parameters: bad");
  EXPECT_EQ(renamed("max_tokens must be"), "max_output_tokens must be");
  EXPECT_EQ(renamed("max_tokensx"), "max_tokensx");
  EXPECT_EQ(renamed("response_format.json_schema.schema.$ref: x"), "text.format.schema.$ref: x");
  EXPECT_EQ(responses_error_param("text.format.schema.$ref: x"), "text.format.schema.$ref");
  EXPECT_EQ(responses_error_param("the request body is not JSON"), "");
}

// Every node of a rich body replaced by values of every type: translation never throws, and
// what it refuses is kInvalidArgument.
TEST(ResponsesRequest, MutatedBodiesNeverThrow) {
  const json base = json::parse(R"({"model":"m","instructions":"i","input":[
    {"role":"user","content":[{"type":"input_text","text":"a"}]},
    {"type":"reasoning","summary":[{"type":"summary_text","text":"s"}]},
    {"type":"function_call","call_id":"c","name":"get_weather","arguments":"{}"},
    {"type":"function_call_output","call_id":"c","output":"o"}],
    "tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],
    "tool_choice":{"type":"function","name":"get_weather"},"text":{"format":{"type":"json_schema","name":"n",
    "schema":{"type":"object"}}},"reasoning":{"effort":"low"},"max_output_tokens":16,"stream":true})");
  const std::vector<json> values = {nullptr, true, 0, -1, 1.5, "", "x", json::array(), json::object(),
                                    json::array({nullptr}), json::object({{"type", nullptr}})};
  std::vector<json::json_pointer> pointers;
  std::function<void(const json&, const json::json_pointer&)> walk = [&](const json& j, const json::json_pointer& p) {
    pointers.push_back(p);
    if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) walk(it.value(), p / it.key());
    } else if (j.is_array()) {
      for (size_t i = 0; i < j.size(); ++i) walk(j[i], p / i);
    }
  };
  walk(base, json::json_pointer());
  size_t n = 0;
  for (const auto& p : pointers) {
    for (const auto& v : values) {
      json body = base;
      body[p] = v;
      if (!body.is_object()) continue;
      EXPECT_NO_THROW({
        auto r = parse(body);
        if (!r.ok()) {
          EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << body.dump() << r.status().to_string();
        }
      }) << body.dump();
      ++n;
    }
  }
  EXPECT_GT(n, 300u);
}

// Input that ends with an assistant message is answered with a new message, as OpenAI's
// Responses API answers it: the chat route's prefill (continuing that message's text) gave
// the continuation of the old message as the response's output.
TEST(ResponsesRequest, AFinalAssistantMessageIsAClosedTurnNotAPrefill) {
  json input = json::parse(R"([{"role":"user","content":"Hi"},
    {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello there"}]}])");
  auto r = parse({{"input", input}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r->chat.continue_final_message);
  auto prompt = server::render_chat_request(r->chat);
  ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
  EXPECT_FALSE(prompt->prefill);
  const std::string closed = "Hello there<turn|>\n<|turn>model\n";
  EXPECT_NE(prompt->text.find(closed), std::string::npos) << prompt->text;
  // The chat route still continues it (llama-server's prefill).
  server::ChatCompletionRequest chat = r->chat;
  chat.continue_final_message = true;
  auto prefill = server::render_chat_request(chat);
  ASSERT_TRUE(prefill.ok());
  EXPECT_TRUE(prefill->prefill);
  EXPECT_TRUE(prefill->text.ends_with("Hello there")) << prefill->text;
}

// OpenAI pairs a function_call_output with its call by call_id wherever it sits, and Codex
// puts hook context (a developer message) between a call and its output. Such input was a
// 400 ("a tool message must follow an assistant message with tool_calls"), repeated on every
// later request of the session. The outputs are now placed right after their call's turn,
// and what came between follows them; an answered turn takes no later calls.
TEST(ResponsesRequest, OutputsFollowTheirCallsTurnWhateverCameBetween) {
  json input = json::parse(R"([{"role":"user","content":"Hi"},
    {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
    {"type":"function_call","call_id":"c2","name":"get_weather","arguments":"{\"city\":\"Rome\"}"},
    {"role":"developer","content":"hook context"},
    {"type":"function_call_output","call_id":"c2","output":"rain"},
    {"role":"user","content":"and?"},
    {"type":"function_call_output","call_id":"c1","output":"sun"},
    {"type":"function_call","call_id":"c3","name":"get_weather","arguments":"{}"},
    {"type":"function_call_output","call_id":"c3","output":"snow"}])");
  auto r = parse({{"input", input}, {"tools", json::array({kTool})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto& m = r->chat.messages;
  ASSERT_EQ(m.size(), 8u);
  EXPECT_EQ(m[0].content, "Hi");
  EXPECT_EQ(m[1].role, text::ChatRole::kAssistant);
  ASSERT_EQ(m[1].tool_calls.size(), 2u);
  EXPECT_EQ(m[2].role, text::ChatRole::kTool);
  EXPECT_EQ(m[2].tool_call_id, "c2");
  EXPECT_EQ(m[3].role, text::ChatRole::kTool);
  EXPECT_EQ(m[3].tool_call_id, "c1");
  EXPECT_EQ(m[4].content, "hook context");
  EXPECT_EQ(m[5].content, "and?");
  EXPECT_EQ(m[6].role, text::ChatRole::kAssistant);  // c3: a new turn, c1's was answered
  ASSERT_EQ(m[6].tool_calls.size(), 1u);
  EXPECT_EQ(m[6].tool_calls[0].id, "c3");
  EXPECT_EQ(m[7].tool_call_id, "c3");
  // It renders (the chat format's pairing holds), and errors still name the items.
  auto prompt = server::render_chat_request(r->chat);
  ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
  auto renamed = [&](const std::string& msg) {
    return r->translation.rename_error(Status(StatusCode::kInvalidArgument, msg)).message();
  };
  EXPECT_EQ(renamed("messages[2].content: bad"), "input[4].output: bad");
  EXPECT_EQ(renamed("messages[3].tool_call_id: bad"), "input[6].call_id: bad");
  EXPECT_EQ(renamed("messages[4].content: bad"), "input[3].content: bad");
  EXPECT_EQ(renamed("messages[1].tool_calls[1].function.arguments: bad"), "input[2].arguments: bad");
  // An output before its call is still refused.
  json early = json::parse(R"([{"role":"user","content":"Hi"},
    {"type":"function_call_output","call_id":"c1","output":"sun"},
    {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{}"}])");
  EXPECT_NE(error_of({{"input", early}}).find("input[1].call_id 'c1' answers no function_call item before it"),
            std::string::npos);
}

// A chat completion field that the Responses route does not read was dropped without a word:
// response_format gave free text, max_tokens 2 up to the default 4096 tokens, n 3 one output,
// stop no stop. Each is refused by name (code unsupported), with the Responses field to send
// where there is one; neutral values and the fields the route reads pass.
TEST(ResponsesRequest, ChatFieldsItDoesNotReadAreRefusedByName) {
  const json base{{"input", "hi"}};
  struct Case {
    json extra;
    std::string field;
    std::string instead;  // "" when the route has no such field
  };
  const std::vector<Case> cases = {
      {{{"response_format", {{"type", "json_object"}}}}, "response_format", "text.format"},
      {{{"max_tokens", 2}}, "max_tokens", "max_output_tokens"},
      {{{"max_completion_tokens", 2}}, "max_completion_tokens", "max_output_tokens"},
      {{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}}, "messages", "input"},
      {{{"reasoning_effort", "none"}}, "reasoning_effort", "reasoning.effort"},
      {{{"guided_json", {{"type", "object"}}}}, "guided_json", "text.format"},
      {{{"n", 3}}, "n", ""},
      {{{"stop", json::array({"e"})}}, "stop", ""},
      {{{"logit_bias", {{"5", 1}}}}, "logit_bias", ""},
      {{{"logprobs", true}}, "logprobs", ""},
      {{{"stop_token_ids", json::array({18})}}, "stop_token_ids", ""},
      {{{"grammar", "root ::= x"}}, "grammar", ""},
      {{{"typical_p", 0.5}}, "typical_p", ""},
      {{{"t_max_predict_ms", 50}}, "t_max_predict_ms", ""},
      // The Messages route's own fields (they were dropped here without a word).
      {{{"system", "Be terse."}}, "system", "instructions"},
      {{{"stop_sequences", json::array({"e"})}}, "stop_sequences", ""},
      {{{"thinking", {{"type", "disabled"}}}}, "thinking", "reasoning.effort"},
      {{{"output_config", {{"format", {{"type", "json_schema"}, {"schema", {{"type", "object"}}}}}}}},
       "output_config",
       "text.format"},
      {{{"output_format", {{"type", "json_schema"}, {"schema", {{"type", "object"}}}}}}, "output_format", "text.format"},
      {{{"n_cmpl", 2}}, "n_cmpl", ""},
  };
  for (const Case& c : cases) {
    json body = base;
    body.update(c.extra);
    auto r = parse(body);
    ASSERT_FALSE(r.ok()) << body.dump();
    EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << r.status().to_string();
    const std::string& m = r.status().message();
    EXPECT_EQ(m.rfind(c.field + " ", 0), 0u) << m;
    if (!c.instead.empty()) {
      EXPECT_NE(m.find("send " + c.instead), std::string::npos) << m;
    }
    EXPECT_EQ(responses_error_param(m), c.field) << m;
  }
  // Neutral values, the route's own fields and fields the chat route does not know pass.
  json neutral = base;
  neutral.update({{"n", 1}, {"logprobs", false}, {"stop", nullptr}, {"logit_bias", json::object()}, {"grammar", ""},
                  {"stream_options", {{"include_obfuscation", false}}}, {"seed", 3}, {"top_k", 5},
                  {"max_output_tokens", 19}, {"reasoning_format", "none"}, {"user", "u"}, {"service_tier", "auto"},
                  {"t_max_predict_ms", 0}, {"n_indent", 0}, {"n_cmpl", 1}, {"lora", json::array()}});
  auto r = parse(neutral);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->chat.gen.max_tokens, 19);
  EXPECT_EQ(r->chat.gen.n, 1);
}

// llama-server's cache_prompt was refused here as a chat completions field (and `false`, taken
// for its neutral value, passed unread). It is read as on the chat route: false computes the
// whole prompt, any other type is a 400 naming it.
TEST(ResponsesRequest, CachePromptIsReadAsOnTheChatRoute) {
  json body = {{"input", "Hello"}};
  auto r = parse(body);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->chat.gen.cache_prompt);
  body["cache_prompt"] = true;
  r = parse(body);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->chat.gen.cache_prompt);
  body["cache_prompt"] = false;
  r = parse(body);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r->chat.gen.cache_prompt);
  body["cache_prompt"] = "no";
  const std::string msg = error_of(body);
  EXPECT_EQ(msg.rfind("cache_prompt", 0), 0u) << msg;
  EXPECT_EQ(responses_error_param(msg), "cache_prompt") << msg;
}

// reasoning.effort asks for thinking; under the server's --reasoning-budget 0 (a default) it
// was answered without (decision 0060).
TEST(ResponsesRequest, ReasoningEffortIsNotVetoedByAServerBudgetOfZero) {
  RequestDefaults d;
  d.enable_thinking = false;
  d.reasoning_budget = 0;
  auto r = parse_responses_request({{"input", "hi"}, {"reasoning", {{"effort", "high"}}}}, d);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->chat.enable_thinking);
  EXPECT_EQ(r->chat.reasoning_budget, -1);
  r = parse_responses_request({{"input", "hi"}}, d);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r->chat.enable_thinking);
  r = parse_responses_request({{"input", "hi"}, {"reasoning", {{"effort", "none"}}}}, d);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r->chat.enable_thinking);
}

}  // namespace
}  // namespace gs
