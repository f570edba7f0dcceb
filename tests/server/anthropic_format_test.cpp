// The Anthropic response builders on their own (server/anthropic_format.h): the message
// object, stop reasons, usage, error bodies and the stream's event sequence.
#include "server/anthropic_format.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gs::server {
namespace {

using nlohmann::json;

struct Event {
  std::string name;
  json data;
};

// The events of an SSE text, each "event: NAME" line with its "data: JSON" line.
std::vector<Event> events_of(const std::string& sse) {
  std::vector<Event> out;
  size_t pos = 0;
  std::string name;
  while (pos < sse.size()) {
    size_t end = sse.find('\n', pos);
    if (end == std::string::npos) end = sse.size();
    const std::string line = sse.substr(pos, end - pos);
    if (line.rfind("event: ", 0) == 0) name = line.substr(7);
    if (line.rfind("data: ", 0) == 0) {
      json data = json::parse(line.substr(6));
      EXPECT_EQ(data["type"], name) << "an event's name is its data's type";
      out.push_back({name, std::move(data)});
    }
    pos = end + 1;
  }
  return out;
}

std::vector<std::string> names(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.name);
  return out;
}

ResponseMeta meta() { return {"msg_test", 1700000000, "gemma-test"}; }

GenerationResult result(std::string finish) {
  GenerationResult r;
  r.finish_reason = std::move(finish);
  r.usage.prompt_tokens = 30;
  r.usage.cached_tokens = 12;
  r.usage.completion_tokens = 7;
  return r;
}

OutputDelta delta(OutputDelta::Kind kind, std::string text, int tool_index = -1) {
  OutputDelta d;
  d.kind = kind;
  d.text = std::move(text);
  d.tool_index = tool_index;
  return d;
}

OutputDelta call_begin(int index, std::string id, std::string name) {
  OutputDelta d;
  d.kind = OutputDelta::Kind::kToolCallBegin;
  d.tool_index = index;
  d.tool_id = std::move(id);
  d.tool_name = std::move(name);
  return d;
}

TEST(AnthropicFormat, StopReasons) {
  EXPECT_EQ(anthropic_stop(result("stop")).reason, "end_turn");
  EXPECT_EQ(anthropic_stop(result("length")).reason, "max_tokens");
  EXPECT_EQ(anthropic_stop(result("tool_calls")).reason, "tool_use");
  GenerationResult stopped = result("stop");
  stopped.stop_sequence = "END";
  EXPECT_EQ(anthropic_stop(stopped).reason, "stop_sequence");
  EXPECT_EQ(anthropic_stop(stopped).sequence, "END");
  // A call cut by max_tokens is max_tokens, as Anthropic has it.
  GenerationResult cut = result("length");
  cut.tool_calls.push_back({"call_1", "f", "{}"});
  EXPECT_EQ(anthropic_stop(cut).reason, "max_tokens");
}

TEST(AnthropicFormat, UsageSplitsThePromptIntoNewAndCachedTokens) {
  const json u = anthropic_usage_json(result("stop").usage);
  EXPECT_EQ(u["input_tokens"], 18);
  EXPECT_EQ(u["cache_read_input_tokens"], 12);
  EXPECT_EQ(u["cache_creation_input_tokens"], 0);
  EXPECT_EQ(u["output_tokens"], 7);
}

TEST(AnthropicFormat, WholeMessageHoldsThinkingTextAndToolUseBlocks) {
  GenerationResult r = result("tool_calls");
  r.reasoning_content = "Paris is in France.";
  r.content = "Let me check.";
  r.tool_calls.push_back({"call_abc", "get_weather", R"({"city":"Paris"})"});
  r.tool_calls.push_back({"other-id", "get_time", "not json"});
  const json m = anthropic_message_json(meta(), r);
  EXPECT_EQ(m["id"], "msg_test");
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["model"], "gemma-test");
  EXPECT_EQ(m["stop_reason"], "tool_use");
  EXPECT_TRUE(m["stop_sequence"].is_null());
  const json& c = m["content"];
  ASSERT_EQ(c.size(), 4u) << m.dump();
  EXPECT_EQ(c[0], json::parse(R"({"type":"thinking","thinking":"Paris is in France.","signature":""})"));
  EXPECT_EQ(c[1], json::parse(R"({"type":"text","text":"Let me check."})"));
  EXPECT_EQ(c[2], json::parse(R"({"type":"tool_use","id":"toolu_abc","name":"get_weather","input":{"city":"Paris"}})"));
  EXPECT_EQ(c[3]["id"], "other-id");
  EXPECT_EQ(c[3]["input"], json::object());  // never a parse failure in the answer
  EXPECT_EQ(m["usage"]["output_tokens"], 7);
}

// A call's integers beyond 64 bits keep the digits the model wrote, as the stream's
// input_json_delta text and the chat route's arguments string have them (decision 0056):
// nlohmann read them as doubles, so the whole message said 1.2345678901234568e+29.
TEST(AnthropicFormat, ToolUseInputKeepsTheDigitsOfIntegersBeyond64Bits) {
  GenerationResult r = result("tool_calls");
  r.tool_calls.push_back(
      {"call_1", "f", R"({"n":123456789012345678901234567890,"m":-98765432109876543210,"x":1.5,"k":[18446744073709551616]})"});
  const std::string text = anthropic_message_text(meta(), r);
  EXPECT_NE(text.find(R"("input":{"k":[18446744073709551616],"m":-98765432109876543210,"n":123456789012345678901234567890,"x":1.5})"),
            std::string::npos)
      << text;
  const json m = json::parse(text);
  EXPECT_EQ(m["content"][0]["name"], "f");
  EXPECT_EQ(m["stop_reason"], "tool_use");
  // Everything else is the message object as nlohmann writes it.
  GenerationResult plain = result("stop");
  plain.content = "caf\xc3\xa9 \xff";
  plain.tool_calls.push_back({"call_2", "g", R"({"a":[1,2.5,"s",null,true]})"});
  EXPECT_EQ(anthropic_message_text(meta(), plain), dump_json(anthropic_message_json(meta(), plain)));
}

TEST(AnthropicFormat, EmptyOutputIsAnEmptyContentArray) {
  const json m = anthropic_message_json(meta(), result("stop"));
  EXPECT_TRUE(m["content"].is_array());
  EXPECT_TRUE(m["content"].empty());
  EXPECT_EQ(m["stop_reason"], "end_turn");
}

TEST(AnthropicFormat, ErrorBodiesAndTypes) {
  EXPECT_STREQ(anthropic_error_type(400), "invalid_request_error");
  EXPECT_STREQ(anthropic_error_type(405), "invalid_request_error");
  EXPECT_STREQ(anthropic_error_type(401), "authentication_error");
  EXPECT_STREQ(anthropic_error_type(403), "permission_error");
  EXPECT_STREQ(anthropic_error_type(404), "not_found_error");
  EXPECT_STREQ(anthropic_error_type(413), "request_too_large");
  EXPECT_STREQ(anthropic_error_type(429), "rate_limit_error");
  EXPECT_STREQ(anthropic_error_type(503), "overloaded_error");
  EXPECT_STREQ(anthropic_error_type(529), "overloaded_error");
  EXPECT_STREQ(anthropic_error_type(500), "api_error");
  const ApiError e = bad_request("max_tokens is required");
  EXPECT_EQ(json::parse(anthropic_error_body(e)),
            json::parse(R"({"type":"error","error":{"type":"invalid_request_error","message":"max_tokens is required"}})"));
  // Bytes quoted from a client that are not UTF-8 never make the body throw.
  const ApiError bad_utf8 = bad_request(std::string("bad \xff byte"));
  EXPECT_NO_THROW(json::parse(anthropic_error_body(bad_utf8)));
}

TEST(AnthropicFormat, StreamOfTextIsOneBlock) {
  AnthropicStream s(meta());
  std::string sse = s.start(30);
  sse += s.delta(delta(OutputDelta::Kind::kContent, "Hello"));
  sse += s.delta(delta(OutputDelta::Kind::kContent, ", world"));
  sse += s.delta(delta(OutputDelta::Kind::kContent, ""));  // nothing
  sse += s.finish(result("stop"));
  const auto ev = events_of(sse);
  EXPECT_EQ(names(ev), (std::vector<std::string>{"message_start", "ping", "content_block_start", "content_block_delta",
                                                 "content_block_delta", "content_block_stop", "message_delta",
                                                 "message_stop"}));
  const json& start = ev[0].data["message"];
  EXPECT_EQ(start["id"], "msg_test");
  EXPECT_EQ(start["type"], "message");
  EXPECT_EQ(start["role"], "assistant");
  EXPECT_EQ(start["content"], json::array());
  EXPECT_TRUE(start["stop_reason"].is_null());
  EXPECT_EQ(start["usage"]["input_tokens"], 30);
  EXPECT_EQ(start["usage"]["output_tokens"], 0);
  EXPECT_EQ(ev[2].data["index"], 0);
  EXPECT_EQ(ev[2].data["content_block"], json::parse(R"({"type":"text","text":""})"));
  EXPECT_EQ(ev[3].data["delta"], json::parse(R"({"type":"text_delta","text":"Hello"})"));
  EXPECT_EQ(ev[4].data["delta"]["text"], ", world");
  EXPECT_EQ(ev[5].data["index"], 0);
  EXPECT_EQ(ev[6].data["delta"]["stop_reason"], "end_turn");
  EXPECT_TRUE(ev[6].data["delta"]["stop_sequence"].is_null());
  EXPECT_EQ(ev[6].data["usage"]["output_tokens"], 7);
  EXPECT_EQ(ev[6].data["usage"]["input_tokens"], 18);
}

TEST(AnthropicFormat, StreamOfThinkingTextAndCallsOpensABlockPerPart) {
  AnthropicStream s(meta());
  std::string sse = s.start(5);
  sse += s.delta(delta(OutputDelta::Kind::kReasoning, "Hmm."));
  sse += s.delta(delta(OutputDelta::Kind::kContent, "Checking."));
  sse += s.delta(call_begin(0, "call_A", "get_weather"));
  sse += s.delta(delta(OutputDelta::Kind::kToolCallArgs, "{\"city\":", 0));
  sse += s.delta(delta(OutputDelta::Kind::kToolCallArgs, "\"Paris\"}", 0));
  sse += s.delta(delta(OutputDelta::Kind::kToolCallArgs, "{stray}", 3));  // not the open call's: dropped
  sse += s.delta(call_begin(1, "call_B", "get_time"));
  sse += s.delta(delta(OutputDelta::Kind::kToolCallArgs, "{}", 1));
  sse += s.finish(result("tool_calls"));
  const auto ev = events_of(sse);
  EXPECT_EQ(names(ev),
            (std::vector<std::string>{"message_start", "ping",
                                      "content_block_start", "content_block_delta", "content_block_stop",   // thinking
                                      "content_block_start", "content_block_delta", "content_block_stop",   // text
                                      "content_block_start", "content_block_delta", "content_block_delta",  // call 0
                                      "content_block_stop",
                                      "content_block_start", "content_block_delta", "content_block_stop",  // call 1
                                      "message_delta", "message_stop"}));
  EXPECT_EQ(ev[2].data["content_block"], json::parse(R"({"type":"thinking","thinking":"","signature":""})"));
  EXPECT_EQ(ev[3].data["delta"], json::parse(R"({"type":"thinking_delta","thinking":"Hmm."})"));
  EXPECT_EQ(ev[5].data["index"], 1);
  EXPECT_EQ(ev[6].data["delta"]["type"], "text_delta");
  EXPECT_EQ(ev[8].data["index"], 2);
  EXPECT_EQ(ev[8].data["content_block"],
            json::parse(R"({"type":"tool_use","id":"toolu_A","name":"get_weather","input":{}})"));
  std::string partial;
  for (int i : {9, 10}) {
    EXPECT_EQ(ev[i].data["delta"]["type"], "input_json_delta");
    EXPECT_EQ(ev[i].data["index"], 2);
    partial += ev[i].data["delta"]["partial_json"].get<std::string>();
  }
  EXPECT_EQ(json::parse(partial), json::parse(R"({"city":"Paris"})"));
  EXPECT_EQ(ev[11].data["index"], 2);
  EXPECT_EQ(ev[12].data["index"], 3);
  EXPECT_EQ(ev[12].data["content_block"]["name"], "get_time");
  EXPECT_EQ(ev[15].data["delta"]["stop_reason"], "tool_use");
}

TEST(AnthropicFormat, StreamWithoutOutputHasNoBlocksAndErrorsAreEvents) {
  AnthropicStream s(meta());
  GenerationResult stopped = result("stop");
  stopped.stop_sequence = "END";
  const auto ev = events_of(s.start(3) + s.finish(stopped));
  EXPECT_EQ(names(ev), (std::vector<std::string>{"message_start", "ping", "message_delta", "message_stop"}));
  EXPECT_EQ(ev[2].data["delta"]["stop_reason"], "stop_sequence");
  EXPECT_EQ(ev[2].data["delta"]["stop_sequence"], "END");
  const auto err = events_of(AnthropicStream::error(api_error_from_status(Status(StatusCode::kInternal, "boom"))));
  ASSERT_EQ(err.size(), 1u);
  EXPECT_EQ(err[0].name, "error");
  EXPECT_EQ(err[0].data["error"]["type"], "api_error");
  EXPECT_EQ(err[0].data["error"]["message"], "boom");
  EXPECT_EQ(events_of(AnthropicStream::ping())[0].name, "ping");
}

}  // namespace
}  // namespace gs::server
