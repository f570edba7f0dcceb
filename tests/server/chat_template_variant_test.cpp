// The model's chat template variant (RequestDefaults::chat_template, from its GGUF) renders the
// prompts of every chat route: a model whose tokenizer.chat_template is the older interleaved
// Gemma 4 template gets tool results as <|turn>tool turns, as that template writes them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "server/anthropic_request.h"
#include "server/api_request.h"
#include "server/request_plan.h"
#include "server/responses_request.h"
#include "text/chat_format.h"

namespace gs::server {
namespace {

using nlohmann::json;

RequestDefaults defaults_for(text::ChatTemplate variant) {
  RequestDefaults d;
  d.enable_thinking = false;
  d.chat_template = variant;
  return d;
}

std::string rendered(const Result<ChatCompletionRequest>& req) {
  EXPECT_TRUE(req.ok()) << req.status().to_string();
  if (!req.ok()) return "";
  Result<text::RenderedPrompt> prompt = render_chat_request(*req);
  EXPECT_TRUE(prompt.ok()) << prompt.status().to_string();
  return prompt.ok() ? prompt->text : "";
}

// What the renderer writes for the same conversation in `variant`.
std::string expected(text::ChatTemplate variant) {
  text::ChatMessage user;
  user.role = text::ChatRole::kUser;
  user.content = "Weather in Oslo?";
  text::ChatMessage call;
  call.role = text::ChatRole::kAssistant;
  call.tool_calls.push_back({"c1", "get_weather", R"({"city":"Oslo"})"});
  text::ChatMessage result;
  result.role = text::ChatRole::kTool;
  result.tool_call_id = "c1";
  result.content = "sunny";
  const text::ChatMessage messages[] = {user, call, result};
  text::ChatTool tool;
  tool.name = "get_weather";
  tool.parameters = json{{"type", "object"}};
  text::ChatRenderOptions options;
  options.variant = variant;
  Result<text::RenderedPrompt> p = text::render_chat_prompt(messages, std::span(&tool, 1), options);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? p->text : "";
}

const json kChatBody = json::parse(R"({"messages":[
  {"role":"user","content":"Weather in Oslo?"},
  {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
    "function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
  {"role":"tool","tool_call_id":"c1","content":"sunny"}],
  "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]})");

const json kMessagesBody = json::parse(R"({"model":"m","max_tokens":8,"messages":[
  {"role":"user","content":"Weather in Oslo?"},
  {"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"get_weather","input":{"city":"Oslo"}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"sunny"}]}],
  "tools":[{"name":"get_weather","input_schema":{"type":"object"}}]})");

const json kResponsesBody = json::parse(R"({"model":"m","input":[
  {"role":"user","content":"Weather in Oslo?"},
  {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
  {"type":"function_call_output","call_id":"c1","output":"sunny"}],
  "tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]})");

// The interleaved variant was implemented and detected from the GGUF but never reached the
// routes: every model's prompts came in the 31B template's format.
TEST(ChatTemplateVariant, TheModelsVariantRendersEveryChatRoute) {
  for (const text::ChatTemplate variant : {text::ChatTemplate::kGemma4, text::ChatTemplate::kGemma4Interleaved}) {
    const RequestDefaults d = defaults_for(variant);
    const std::string want = expected(variant);
    ASSERT_FALSE(want.empty());
    const bool tool_turn = want.find("<|turn>tool\n") != std::string::npos;
    EXPECT_EQ(tool_turn, variant == text::ChatTemplate::kGemma4Interleaved) << want;
    EXPECT_EQ(rendered(parse_chat_request(kChatBody, d)), want) << "chat completions";
    EXPECT_EQ(rendered(parse_messages_request(kMessagesBody, d, MessagesRoute::kCreate)), want) << "messages";
    EXPECT_EQ(rendered(parse_messages_request(kMessagesBody, d, MessagesRoute::kCountTokens)), want)
        << "count_tokens";
    Result<ResponsesRequest> responses = parse_responses_request(kResponsesBody, d);
    ASSERT_TRUE(responses.ok()) << responses.status().to_string();
    EXPECT_EQ(rendered(responses->chat), want) << "responses";
  }
}

}  // namespace
}  // namespace gs::server
