// Parsed model output rendered back as history reproduces the model's own markup (so the
// next request's prompt extends the cached tokens), and random conversations never crash
// the renderer.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>
#include <string>
#include <vector>

#include "text/chat_format.h"
#include "text/output_parser.h"
#include "text/utf8.h"

namespace gs::text {
namespace {

ChatMessage user(std::string s) {
  ChatMessage m;
  m.role = ChatRole::kUser;
  m.content = std::move(s);
  return m;
}

ChatMessage as_history(const ParsedMessage& p) {
  ChatMessage m;
  m.role = ChatRole::kAssistant;
  m.content = p.content;
  m.reasoning_content = p.reasoning_content;
  for (const auto& c : p.tool_calls) m.tool_calls.push_back({c.id, c.name, c.arguments_json});
  return m;
}

TEST(ChatRoundTrip, ToolCallTurnRendersBackAsGenerated) {
  // What the model generated after "<|turn>model\n" with thinking on, up to its EOG token.
  const std::string generated =
      "<|channel>thought\nNeed the weather.\n<channel|><|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>,"
      "days:2}<tool_call|>";
  ParserOptions o;
  o.tool_call_id_seed = 7;
  const ParsedMessage parsed = parse_output(generated, o);
  ASSERT_EQ(parsed.tool_calls.size(), 1u);
  ChatRenderOptions ro;
  ro.enable_thinking = true;
  ro.add_generation_prompt = false;
  auto prompt = render_chat(std::vector<ChatMessage>{user("Weather in Oslo?"), as_history(parsed)}, {}, ro);
  ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
  EXPECT_TRUE(prompt->ends_with("<|turn>model\n" + generated + "<|tool_response>")) << *prompt;
}

TEST(ChatRoundTrip, PlainAnswerRendersBackWithoutReasoning) {
  const std::string generated = "<|channel>thought\nEasy.<channel|>Paris.";
  const ParsedMessage parsed = parse_output(generated);
  auto prompt = render_chat(std::vector<ChatMessage>{user("Capital of France?"), as_history(parsed), user("And Italy?")},
                            {}, {});
  ASSERT_TRUE(prompt.ok());
  EXPECT_NE(prompt->find("<|turn>model\nParis.<turn|>\n<|turn>user\nAnd Italy?"), std::string::npos) << *prompt;
}

TEST(ChatRoundTrip, ArgumentsSurviveJsonAndBack) {
  const std::string args = "{a:[1,-2.5,true,null],b:<|\"|>x \"y\"<|\"|>,c:{d:<|\"|><|\"|>}}";
  const ParsedMessage parsed = parse_output("<|tool_call>call:f" + args + "<tool_call|>");
  ASSERT_EQ(parsed.tool_calls.size(), 1u);
  auto prompt = render_chat(std::vector<ChatMessage>{user("go"), as_history(parsed)}, {}, {});
  ASSERT_TRUE(prompt.ok());
  // The renderer prints null as Python's None (the template's own behaviour).
  EXPECT_NE(prompt->find("<|tool_call>call:f{a:[1,-2.5,true,None],b:<|\"|>x \"y\"<|\"|>,c:{d:<|\"|><|\"|>}}"),
            std::string::npos)
      << *prompt;
}

TEST(ChatRoundTrip, RandomConversationsNeverCrash) {
  std::mt19937 rng(11);
  const std::vector<std::string> texts = {"", " ", "hi", "<|turn>x", "<channel|>y", "日本 😀", "a\nb", "{\"k\":1}",
                                          "<|channel>thought\nz<channel|>w", "\xff\xfe"};
  const std::vector<std::string> args = {"", "{}", R"({"a":1})", R"({"a":{"b":[1,2.5,null,true,"s"]}})", "[1]",
                                         "not json", R"({"A":1,"a":2})"};
  int ok = 0;
  for (int k = 0; k < 3000; ++k) {
    std::vector<ChatMessage> msgs;
    const int n = static_cast<int>(rng() % 7);
    for (int i = 0; i < n; ++i) {
      ChatMessage m;
      m.role = static_cast<ChatRole>(rng() % 5);
      m.content = texts[rng() % texts.size()];
      if (rng() % 4 == 0) m.content_parts.push_back({static_cast<ContentPartType>(rng() % 4), texts[rng() % texts.size()]});
      if (m.role == ChatRole::kAssistant && rng() % 2) {
        m.tool_calls.push_back({"id" + std::to_string(rng() % 3), "fn", args[rng() % args.size()]});
        m.reasoning_content = texts[rng() % texts.size()];
      }
      if (m.role == ChatRole::kTool) {
        m.tool_call_id = rng() % 4 ? "id" + std::to_string(rng() % 3) : "";
        if (rng() % 3 == 0) m.name = "fn";
      }
      msgs.push_back(std::move(m));
    }
    std::vector<ChatTool> tools;
    if (rng() % 2) {
      tools.push_back(
          {"t", "d", nlohmann::json::parse(R"({"type":"object","properties":{"x":{"type":"string"}}})"), std::nullopt});
    }
    ChatRenderOptions o;
    o.enable_thinking = rng() % 2;
    o.add_generation_prompt = rng() % 2;
    o.merge_leading_system = rng() % 2;
    auto r = render_chat_prompt(msgs, tools, o);
    if (r.ok()) {
      ++ok;
      for (const auto& span : r->markup) ASSERT_LE(span.offset + span.length, r->text.size());
    } else {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
    }
  }
  EXPECT_GT(ok, 1000);
}

}  // namespace
}  // namespace gs::text
