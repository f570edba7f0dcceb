// Responses API output (decision 0032): the response object's items, status and usage, and
// the stream's event order, sequence numbers and final response.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/responses_format.h"

namespace gs {
namespace {

using nlohmann::json;
using server::GenerationResult;
using server::OutputDelta;
using server::ResponsesStream;

GenerationResult result_with(std::string reasoning, std::string content, std::string finish) {
  GenerationResult r;
  r.reasoning_content = std::move(reasoning);
  r.content = std::move(content);
  r.finish_reason = std::move(finish);
  r.usage.prompt_tokens = 10;
  r.usage.cached_tokens = 4;
  r.usage.completion_tokens = 6;
  r.reasoning_tokens = 3;
  return r;
}

const server::ResponseMeta kMeta{"resp_abc", 1764720000, "gemma"};
const json kEcho{{"tools", json::array()}, {"tool_choice", "auto"}, {"temperature", 1.0}};

TEST(ResponsesFormat, WholeResponseItemsStatusAndUsage) {
  GenerationResult r = result_with("Think.", "Paris.", "tool_calls");
  r.tool_calls.push_back({"call_1", "get_weather", R"({"city":"Paris"})"});
  const json j = server::responses_response_json(kMeta, kEcho, r);
  EXPECT_EQ(j["id"], "resp_abc");
  EXPECT_EQ(j["object"], "response");
  EXPECT_EQ(j["created_at"], 1764720000);
  EXPECT_EQ(j["status"], "completed");
  EXPECT_TRUE(j["incomplete_details"].is_null());
  EXPECT_TRUE(j["error"].is_null());
  EXPECT_EQ(j["model"], "gemma");
  EXPECT_EQ(j["tool_choice"], "auto");
  EXPECT_EQ(j["output_text"], "Paris.");
  ASSERT_EQ(j["output"].size(), 3u);
  const json& rs = j["output"][0];
  EXPECT_EQ(rs["type"], "reasoning");
  EXPECT_TRUE(rs["id"].get<std::string>().starts_with("rs_"));
  EXPECT_EQ(rs["summary"], json::array());
  EXPECT_EQ(rs["content"][0], json({{"type", "reasoning_text"}, {"text", "Think."}}));
  const json& msg = j["output"][1];
  EXPECT_EQ(msg["type"], "message");
  EXPECT_TRUE(msg["id"].get<std::string>().starts_with("msg_"));
  EXPECT_EQ(msg["role"], "assistant");
  EXPECT_EQ(msg["status"], "completed");
  EXPECT_EQ(msg["content"][0]["type"], "output_text");
  EXPECT_EQ(msg["content"][0]["text"], "Paris.");
  EXPECT_EQ(msg["content"][0]["annotations"], json::array());
  const json& fc = j["output"][2];
  EXPECT_EQ(fc["type"], "function_call");
  EXPECT_TRUE(fc["id"].get<std::string>().starts_with("fc_"));
  EXPECT_EQ(fc["call_id"], "call_1");
  EXPECT_EQ(fc["name"], "get_weather");
  EXPECT_EQ(fc["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(fc["status"], "completed");
  EXPECT_EQ(j["usage"], json::parse(R"({"input_tokens":10,"input_tokens_details":{"cached_tokens":4},
    "output_tokens":6,"output_tokens_details":{"reasoning_tokens":3},"total_tokens":16})"));
}

TEST(ResponsesFormat, LengthIsIncompleteWithMaxOutputTokens) {
  const json j = server::responses_response_json(kMeta, kEcho, result_with("", "To be, or not", "length"));
  EXPECT_EQ(j["status"], "incomplete");
  EXPECT_EQ(j["incomplete_details"]["reason"], "max_output_tokens");
  ASSERT_EQ(j["output"].size(), 1u);
  EXPECT_EQ(j["output"][0]["status"], "incomplete");
  const json empty = server::responses_response_json(kMeta, kEcho, result_with("", "", "stop"));
  EXPECT_EQ(empty["output"], json::array());
  EXPECT_EQ(empty["output_text"], "");
}

struct Event {
  std::string name;
  json data;
};

// Splits SSE text into events, checking that each event: line names its data's type.
std::vector<Event> events_of(const std::string& sse) {
  std::vector<Event> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    const size_t end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << sse.substr(pos);
    if (end == std::string::npos) break;
    const std::string block = sse.substr(pos, end - pos);
    pos = end + 2;
    const size_t nl = block.find('\n');
    EXPECT_TRUE(block.starts_with("event: ")) << block;
    EXPECT_TRUE(block.substr(nl + 1).starts_with("data: ")) << block;
    Event e{block.substr(7, nl - 7), json::parse(block.substr(nl + 7))};
    EXPECT_EQ(e.name, e.data["type"]);
    out.push_back(std::move(e));
  }
  return out;
}

OutputDelta delta(OutputDelta::Kind kind, std::string text) {
  OutputDelta d;
  d.kind = kind;
  d.text = std::move(text);
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

// Bug-case 65: thinking, then a call; the events of each item in order, no text item.
TEST(ResponsesFormat, StreamOfThinkingThenACall) {
  ResponsesStream s(kMeta, kEcho);
  std::string sse = s.start();
  sse += s.delta(delta(OutputDelta::Kind::kReasoning, "Need the "));
  sse += s.delta(delta(OutputDelta::Kind::kReasoning, "weather."));
  sse += s.delta(call_begin(0, "call_1", "get_weather"));
  sse += s.delta(delta(OutputDelta::Kind::kToolCallArgs, "{\"city\":"));
  sse += s.delta(delta(OutputDelta::Kind::kToolCallArgs, "\"Oslo\"}"));
  GenerationResult r = result_with("Need the weather.", "", "tool_calls");
  r.tool_calls.push_back({"call_1", "get_weather", R"({"city":"Oslo"})"});
  sse += s.finish(r);
  const std::vector<Event> ev = events_of(sse);
  const std::vector<std::string> expected = {
      "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
      "response.reasoning_text.delta", "response.reasoning_text.delta", "response.reasoning_text.done",
      "response.content_part.done", "response.output_item.done", "response.output_item.added",
      "response.function_call_arguments.delta", "response.function_call_arguments.delta",
      "response.function_call_arguments.done", "response.output_item.done", "response.completed"};
  ASSERT_EQ(ev.size(), expected.size()) << sse;
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i].name, expected[i]) << i;
    EXPECT_EQ(ev[i].data["sequence_number"], i);
  }
  EXPECT_EQ(ev[0].data["response"]["status"], "in_progress");
  EXPECT_EQ(ev[0].data["response"]["output"], json::array());
  // The SDKs' stream helpers compute output_text of the final response only when it is absent.
  EXPECT_FALSE(ev[0].data["response"].contains("output_text"));
  EXPECT_EQ(ev[2].data["item"]["type"], "reasoning");
  EXPECT_EQ(ev[3].data["part"]["type"], "reasoning_text");
  EXPECT_EQ(ev[6].data["text"], "Need the weather.");
  const std::string rs_id = ev[2].data["item"]["id"];
  EXPECT_EQ(ev[4].data["item_id"], rs_id);
  EXPECT_EQ(ev[8].data["item"]["content"][0]["text"], "Need the weather.");
  EXPECT_EQ(ev[9].data["output_index"], 1);
  EXPECT_EQ(ev[9].data["item"]["type"], "function_call");
  EXPECT_EQ(ev[9].data["item"]["call_id"], "call_1");
  EXPECT_EQ(ev[9].data["item"]["name"], "get_weather");
  EXPECT_EQ(ev[9].data["item"]["arguments"], "");
  EXPECT_EQ(ev[9].data["item"]["status"], "in_progress");
  EXPECT_EQ(ev[12].data["arguments"], R"({"city":"Oslo"})");
  EXPECT_EQ(ev[13].data["item"]["status"], "completed");
  const json& final = ev[14].data["response"];
  EXPECT_EQ(final["status"], "completed");
  ASSERT_EQ(final["output"].size(), 2u);
  EXPECT_EQ(final["output"][0]["id"], rs_id);
  EXPECT_EQ(final["output"][1]["id"], ev[9].data["item"]["id"]);
  EXPECT_EQ(final["output"][1]["arguments"], R"({"city":"Oslo"})");
  EXPECT_EQ(final["usage"]["output_tokens"], 6);
}

TEST(ResponsesFormat, StreamOfTextCutByTheLimit) {
  ResponsesStream s(kMeta, kEcho);
  std::string sse = s.start();
  sse += s.delta(delta(OutputDelta::Kind::kContent, "To be, "));
  sse += s.delta(delta(OutputDelta::Kind::kContent, ""));
  sse += s.delta(delta(OutputDelta::Kind::kContent, "or not"));
  sse += s.finish(result_with("", "To be, or not", "length"));
  const std::vector<Event> ev = events_of(sse);
  const std::vector<std::string> expected = {
      "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
      "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
      "response.content_part.done", "response.output_item.done", "response.incomplete"};
  ASSERT_EQ(ev.size(), expected.size()) << sse;
  for (size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i].name, expected[i]) << i;
  EXPECT_EQ(ev[2].data["item"]["role"], "assistant");
  EXPECT_EQ(ev[2].data["item"]["status"], "in_progress");
  EXPECT_EQ(ev[3].data["part"]["type"], "output_text");
  EXPECT_EQ(ev[6].data["text"], "To be, or not");
  EXPECT_EQ(ev[8].data["item"]["status"], "incomplete");
  EXPECT_EQ(ev[9].data["response"]["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(ev[9].data["response"]["output_text"], "To be, or not");
}

TEST(ResponsesFormat, FailedStreamEndsWithResponseFailed) {
  ResponsesStream s(kMeta, kEcho);
  std::string sse = s.start();
  sse += s.delta(delta(OutputDelta::Kind::kContent, "Hi"));
  sse += s.fail(server::api_error_from_status(Status(StatusCode::kInternal, "the model failed")));
  const std::vector<Event> ev = events_of(sse);
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().name, "response.failed");
  EXPECT_EQ(ev.back().data["response"]["status"], "failed");
  EXPECT_EQ(ev.back().data["response"]["error"]["message"], "the model failed");
  EXPECT_FALSE(ev.back().data["response"]["error"]["code"].get<std::string>().empty());
}

}  // namespace
}  // namespace gs
