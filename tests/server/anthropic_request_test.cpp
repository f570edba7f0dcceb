// Anthropic Messages bodies to the chat route's typed request (server/anthropic_request.h):
// system, content blocks, tool_use / tool_result pairing, tools, tool_choice, thinking,
// sampling, and the 400s, each naming the field in the client's terms; the translation
// renders the prompt the equivalent OpenAI chat body renders.
#include "server/anthropic_request.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "server/request_plan.h"
#include "server_fixture.h"

namespace gs::server {
namespace {

using nlohmann::json;

RequestDefaults defaults() {
  RequestDefaults d;
  d.sampling.temperature = 0.5f;
  d.enable_thinking = false;
  d.n_vocab = 1000;
  return d;
}

Result<ChatCompletionRequest> parse(const std::string& body, MessagesRoute route = MessagesRoute::kCreate,
                                    const RequestDefaults& d = defaults()) {
  return parse_messages_request(json::parse(body), d, route);
}

ChatCompletionRequest ok(const std::string& body, MessagesRoute route = MessagesRoute::kCreate) {
  auto r = parse(body, route);
  EXPECT_TRUE(r.ok()) << body << ": " << r.status().to_string();
  return r.ok() ? *r : ChatCompletionRequest{};
}

// The 400 message for `body`; "" (and a test failure) when it was accepted.
std::string refused(const std::string& body, MessagesRoute route = MessagesRoute::kCreate) {
  auto r = parse(body, route);
  EXPECT_FALSE(r.ok()) << "accepted: " << body;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  return r.status().message();
}

const char* kWeatherTool = R"({"name":"get_weather","description":"Weather of a city",
  "input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}})";

std::string with_tools(const std::string& messages, const std::string& extra = "") {
  return std::string(R"({"max_tokens":64,"tools":[)") + kWeatherTool + R"(],"messages":)" + messages + extra + "}";
}

TEST(AnthropicRequest, SystemStringAndUserTextWithSampling) {
  auto r = ok(R"({"model":"claude-x","max_tokens":100,"system":"Be brief.","messages":[{"role":"user","content":"Hi"}],
    "temperature":0.2,"top_p":0.9,"top_k":40,"stop_sequences":["END",""],"stream":true,
    "metadata":{"user_id":"u-1"},"service_tier":"auto","mcp_servers":[]})");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, text::ChatRole::kSystem);
  EXPECT_EQ(r.messages[0].content, "Be brief.");
  EXPECT_EQ(r.messages[1].role, text::ChatRole::kUser);
  EXPECT_EQ(r.messages[1].content, "Hi");
  EXPECT_EQ(r.model, "claude-x");
  ASSERT_TRUE(r.gen.max_tokens.has_value());
  EXPECT_EQ(*r.gen.max_tokens, 100);
  EXPECT_FLOAT_EQ(r.gen.sampling.temperature, 0.2f);
  EXPECT_FLOAT_EQ(r.gen.sampling.top_p, 0.9f);
  EXPECT_EQ(r.gen.sampling.top_k, 40);
  EXPECT_EQ(r.gen.stop, std::vector<std::string>{"END"});  // the empty one asks for nothing
  EXPECT_TRUE(r.gen.stream);
  EXPECT_EQ(r.tool_choice, ToolChoice::kNone);
  EXPECT_TRUE(r.tools.empty());
}

TEST(AnthropicRequest, DefaultsFillWhatIsLeftOut) {
  auto r = ok(R"({"max_tokens":1,"messages":[{"role":"user","content":"Hi"}]})");
  EXPECT_FLOAT_EQ(r.gen.sampling.temperature, 0.5f);  // the server's default
  EXPECT_FALSE(r.gen.stream);
  EXPECT_FALSE(r.enable_thinking);
  EXPECT_EQ(r.reasoning_budget, -1);
}

TEST(AnthropicRequest, SystemTextBlocksAndUserTextBlocks) {
  auto r = ok(R"({"max_tokens":8,"system":[{"type":"text","text":"One."},{"type":"text","text":"Two.",
    "cache_control":{"type":"ephemeral"}}],
    "messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})");
  ASSERT_EQ(r.messages.size(), 2u);
  ASSERT_EQ(r.messages[0].content_parts.size(), 2u);
  EXPECT_EQ(r.messages[0].content_parts[1].text, "Two.");
  ASSERT_EQ(r.messages[1].content_parts.size(), 2u);
  EXPECT_EQ(r.messages[1].content_parts[0].text, "a");
  // An empty system string adds no system message.
  EXPECT_EQ(ok(R"({"max_tokens":8,"system":"","messages":[{"role":"user","content":"x"}]})").messages.size(), 1u);
}

TEST(AnthropicRequest, ToolUseAndToolResultBecomeCallsAndToolMessages) {
  auto r = ok(with_tools(R"([
    {"role":"user","content":"Weather in Paris and Rome?"},
    {"role":"assistant","content":[
      {"type":"thinking","thinking":"Two cities.","signature":"sig"},
      {"type":"redacted_thinking","data":"xyz"},
      {"type":"text","text":"Checking."},
      {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},
      {"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Rome"}}]},
    {"role":"user","content":[
      {"type":"tool_result","tool_use_id":"toolu_2","content":"rain"},
      {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sun"}],"is_error":false},
      {"type":"text","text":"Thanks"}]}])"));
  ASSERT_EQ(r.messages.size(), 5u);
  const text::ChatMessage& a = r.messages[1];
  EXPECT_EQ(a.role, text::ChatRole::kAssistant);
  EXPECT_EQ(a.reasoning_content, "Two cities.");
  ASSERT_EQ(a.content_parts.size(), 1u);
  EXPECT_EQ(a.content_parts[0].text, "Checking.");
  ASSERT_EQ(a.tool_calls.size(), 2u);
  EXPECT_EQ(a.tool_calls[0].id, "toolu_1");
  EXPECT_EQ(a.tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(a.tool_calls[0].arguments_json), json::parse(R"({"city":"Paris"})"));
  // The results first, in the client's order, then the turn's text.
  EXPECT_EQ(r.messages[2].role, text::ChatRole::kTool);
  EXPECT_EQ(r.messages[2].tool_call_id, "toolu_2");
  EXPECT_EQ(r.messages[2].name, "get_weather");
  EXPECT_EQ(r.messages[2].content, "rain");
  EXPECT_EQ(r.messages[3].tool_call_id, "toolu_1");
  ASSERT_EQ(r.messages[3].content_parts.size(), 1u);
  EXPECT_EQ(r.messages[3].content_parts[0].text, "sun");
  EXPECT_EQ(r.messages[4].role, text::ChatRole::kUser);
  EXPECT_EQ(r.messages[4].content_parts[0].text, "Thanks");
  ASSERT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tools[0].name, "get_weather");
  EXPECT_EQ(r.tools[0].description, "Weather of a city");
  EXPECT_EQ(r.tools[0].parameters["required"][0], "city");
  EXPECT_EQ(r.tool_choice, ToolChoice::kAuto);
  EXPECT_TRUE(r.parallel_tool_calls);
}

// The translation is the chat route's request: it renders the prompt that the equivalent
// OpenAI body renders, byte for byte.
TEST(AnthropicRequest, RendersAsTheEquivalentChatBody) {
  auto anthropic = ok(with_tools(R"([
    {"role":"user","content":"Weather in Paris?"},
    {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sun"}]}])",
                                 R"(,"system":"Be brief.")"));
  auto openai = parse_chat_request(json::parse(R"({"messages":[
    {"role":"system","content":"Be brief."},
    {"role":"user","content":"Weather in Paris?"},
    {"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function",
      "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
    {"role":"tool","tool_call_id":"toolu_1","content":"sun"}],
    "tools":[{"type":"function","function":{"name":"get_weather","description":"Weather of a city",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]})"),
                                   defaults());
  ASSERT_TRUE(openai.ok()) << openai.status().to_string();
  auto a = render_chat_request(anthropic);
  auto o = render_chat_request(*openai);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ(a->text, o->text);
  EXPECT_NE(a->text.find("response:get_weather"), std::string::npos) << a->text;
}

TEST(AnthropicRequest, ToolChoiceForms) {
  EXPECT_EQ(ok(with_tools(R"([{"role":"user","content":"x"}])", R"(,"tool_choice":{"type":"auto"})")).tool_choice,
            ToolChoice::kAuto);
  EXPECT_EQ(ok(with_tools(R"([{"role":"user","content":"x"}])", R"(,"tool_choice":{"type":"any"})")).tool_choice,
            ToolChoice::kRequired);
  EXPECT_EQ(ok(with_tools(R"([{"role":"user","content":"x"}])", R"(,"tool_choice":{"type":"none"})")).tool_choice,
            ToolChoice::kNone);
  auto named = ok(with_tools(R"([{"role":"user","content":"x"}])",
                             R"(,"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true})"));
  EXPECT_EQ(named.tool_choice, ToolChoice::kNamed);
  EXPECT_EQ(named.tool_choice_name, "get_weather");
  EXPECT_FALSE(named.parallel_tool_calls);
  ASSERT_TRUE(forced_tool(named).has_value());
  // auto without tools offers nothing.
  EXPECT_EQ(ok(R"({"max_tokens":8,"tool_choice":{"type":"auto"},"messages":[{"role":"user","content":"x"}]})")
                .tool_choice,
            ToolChoice::kNone);
}

TEST(AnthropicRequest, ThinkingMapsToTheReasoningModeAndBudget) {
  auto on = ok(R"({"max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":1024},
    "messages":[{"role":"user","content":"x"}]})");
  EXPECT_TRUE(on.enable_thinking);
  EXPECT_EQ(on.reasoning_budget, 1024);
  auto adaptive = ok(R"({"max_tokens":64,"thinking":{"type":"adaptive"},"messages":[{"role":"user","content":"x"}]})");
  EXPECT_TRUE(adaptive.enable_thinking);
  EXPECT_EQ(adaptive.reasoning_budget, -1);
  RequestDefaults d = defaults();
  d.enable_thinking = true;
  auto off = parse(R"({"max_tokens":64,"thinking":{"type":"disabled"},"messages":[{"role":"user","content":"x"}]})",
                   MessagesRoute::kCreate, d);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->enable_thinking);
  auto absent = parse(R"({"max_tokens":64,"messages":[{"role":"user","content":"x"}]})", MessagesRoute::kCreate, d);
  ASSERT_TRUE(absent.ok());
  EXPECT_TRUE(absent->enable_thinking);  // the server's --reasoning default
}

// As Anthropic's API: the thinking budget counts within max_tokens, so budget_tokens must be
// less than max_tokens (a 400 naming both). It was accepted at or above it, and the thought
// could spend the whole answer. count_tokens reads no max_tokens: nothing to compare.
// Under the server's --reasoning-budget 0 (a default: "no thinking"), thinking "adaptive" (no
// budget) was answered without thinking. It thinks, without a cap; "enabled" has its own
// budget; absent and "disabled" keep the default.
TEST(AnthropicRequest, AdaptiveThinkingIsNotVetoedByAServerBudgetOfZero) {
  RequestDefaults d = defaults();
  d.enable_thinking = false;
  d.reasoning_budget = 0;
  const std::string head = R"({"max_tokens":4096,"messages":[{"role":"user","content":"x"}])";
  auto r = parse(head + R"(,"thinking":{"type":"adaptive"}})", MessagesRoute::kCreate, d);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->enable_thinking);
  EXPECT_EQ(r->reasoning_budget, -1);
  r = parse(head + R"(,"thinking":{"type":"enabled","budget_tokens":2000}})", MessagesRoute::kCreate, d);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->enable_thinking);
  EXPECT_EQ(r->reasoning_budget, 2000);
  for (const char* off : {"}", R"(,"thinking":{"type":"disabled"}})", R"(,"thinking":null})"}) {
    r = parse(head + off, MessagesRoute::kCreate, d);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_FALSE(r->enable_thinking) << off;
  }
}

TEST(AnthropicRequest, ThinkingBudgetMustBeLessThanMaxTokens) {
  const std::string user = R"("messages":[{"role":"user","content":"x"}])";
  for (const char* type : {"enabled", "adaptive"}) {
    for (const int budget : {1024, 1025, 4096}) {
      const std::string body = fmt::format(
          R"({{"max_tokens":1024,"thinking":{{"type":"{}","budget_tokens":{}}},{}}})", type, budget, user);
      const std::string message = refused(body);
      EXPECT_EQ(message, fmt::format("thinking.budget_tokens ({}) must be less than max_tokens (1024)", budget))
          << body;
      ok(body, MessagesRoute::kCountTokens);
    }
  }
  auto below = ok(R"({"max_tokens":1025,"thinking":{"type":"enabled","budget_tokens":1024},)" + user + "}");
  EXPECT_EQ(below.reasoning_budget, 1024);
  // The server's own --reasoning-budget is not the client's to fit under max_tokens.
  RequestDefaults d = defaults();
  d.enable_thinking = true;
  d.reasoning_budget = 4096;
  EXPECT_TRUE(parse(R"({"max_tokens":64,"thinking":{"type":"adaptive"},)" + user + "}", MessagesRoute::kCreate, d).ok());
  // Thinking disabled reads no budget.
  ok(R"({"max_tokens":64,"thinking":{"type":"disabled","budget_tokens":4096},)" + user + "}");
}

// As Anthropic's API: budget_tokens is at least 1024, on count_tokens too (a 400 naming the
// field). 1..1023 were accepted, so a request Anthropic refuses ran here. The server's own
// --reasoning-budget (any size) is not the client's field.
TEST(AnthropicRequest, ThinkingBudgetIsAtLeast1024) {
  const std::string user = R"("messages":[{"role":"user","content":"x"}])";
  for (const char* type : {"enabled", "adaptive"}) {
    for (const int budget : {1, 512, 1023}) {
      const std::string body = fmt::format(
          R"({{"max_tokens":4096,"thinking":{{"type":"{}","budget_tokens":{}}},{}}})", type, budget, user);
      for (const MessagesRoute route : {MessagesRoute::kCreate, MessagesRoute::kCountTokens}) {
        EXPECT_EQ(refused(body, route),
                  fmt::format("thinking.budget_tokens must be in [1024, 2147483647], got {}", budget))
            << body;
      }
    }
    const std::string least =
        fmt::format(R"({{"max_tokens":4096,"thinking":{{"type":"{}","budget_tokens":1024}},{}}})", type, user);
    EXPECT_EQ(ok(least).reasoning_budget, 1024);
    ok(least, MessagesRoute::kCountTokens);
  }
  // A budget under 1024 that is not under max_tokens either is named for the 1024.
  EXPECT_NE(refused(R"({"max_tokens":100,"thinking":{"type":"enabled","budget_tokens":200},)" + user + "}")
                .find("must be in [1024, "),
            std::string::npos);
  RequestDefaults d = defaults();
  d.enable_thinking = true;
  d.reasoning_budget = 16;
  auto server_budget = parse(R"({"max_tokens":64,"thinking":{"type":"adaptive"},)" + user + "}", MessagesRoute::kCreate, d);
  ASSERT_TRUE(server_budget.ok()) << server_budget.status().to_string();
  EXPECT_EQ(server_budget->reasoning_budget, 16);
}

// Anthropic's API requires budget_tokens with thinking.type "enabled", on count_tokens too: a
// 400 naming the field (decision 0053). It was accepted and ran under the server's
// --reasoning-budget (or none). "adaptive" takes no budget (and reads one sent, decision 0050);
// "disabled" reads none, so a budget beside it is not looked at.
TEST(AnthropicRequest, EnabledThinkingRequiresABudget) {
  const std::string user = R"("messages":[{"role":"user","content":"x"}])";
  RequestDefaults with_server_budget = defaults();
  with_server_budget.enable_thinking = true;
  with_server_budget.reasoning_budget = 16;
  for (const char* thinking : {R"({"type":"enabled"})", R"({"type":"enabled","budget_tokens":null})"}) {
    const std::string body = std::string(R"({"max_tokens":4096,"thinking":)") + thinking + "," + user + "}";
    for (const MessagesRoute route : {MessagesRoute::kCreate, MessagesRoute::kCountTokens}) {
      for (const RequestDefaults& d : {defaults(), with_server_budget}) {
        auto r = parse(body, route, d);
        ASSERT_FALSE(r.ok()) << body;
        EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
        EXPECT_EQ(r.status().message().rfind("thinking.budget_tokens is required when thinking.type is 'enabled'", 0), 0u)
            << r.status().message();
      }
    }
  }
  auto adaptive = ok(R"({"max_tokens":4096,"thinking":{"type":"adaptive"},)" + user + "}");
  EXPECT_TRUE(adaptive.enable_thinking);
  EXPECT_EQ(ok(R"({"max_tokens":4096,"thinking":{"type":"adaptive","budget_tokens":2048},)" + user + "}").reasoning_budget,
            2048);
  ok(R"({"max_tokens":4096,"thinking":{"type":"disabled","budget_tokens":"x"},)" + user + "}");
  EXPECT_EQ(ok(R"({"max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2048},)" + user + "}").reasoning_budget,
            2048);
}

// metadata is an object whose user_id is a string or null (Anthropic's API); anything else is a
// 400 naming the field. It was not looked at ("metadata":5 passed). Its other keys pass, and a
// top-level `user` (OpenAI's name) is refused pointing at metadata.user_id.
TEST(AnthropicRequest, MetadataIsAnObjectWithAStringUserId) {
  const std::string head = R"({"max_tokens":16,"messages":[{"role":"user","content":"x"}],)";
  for (const char* good : {R"("metadata":{"user_id":"u-1"})", R"("metadata":{"user_id":null})", R"("metadata":{})",
                           R"("metadata":null)", R"("metadata":{"user_id":"u","trace":[1,2]})"}) {
    for (MessagesRoute route : {MessagesRoute::kCreate, MessagesRoute::kCountTokens}) ok(head + good + "}", route);
  }
  struct Bad {
    const char* body;
    const char* starts_with;
  };
  const Bad bad[] = {
      {R"("metadata":"u-1")", "metadata must be an object, got string"},
      {R"("metadata":["u"])", "metadata must be an object, got array"},
      {R"("metadata":{"user_id":42})", "metadata.user_id must be a string or null, got number"},
      {R"("metadata":{"user_id":{"id":"u"}})", "metadata.user_id must be a string or null, got object"},
  };
  for (const Bad& c : bad) {
    const std::string message = refused(head + c.body + "}");
    EXPECT_EQ(message.rfind(c.starts_with, 0), 0u) << c.body << "\n  gave: " << message;
  }
  auto user = parse(head + R"("user":"u-1"})");
  ASSERT_FALSE(user.ok());
  EXPECT_EQ(user.status().message(), "user is not read on /v1/messages: send metadata.user_id");
}

// Anthropic's service_tier is "auto" or "standard_only" (or null); anything else is a 400
// naming the field. It was taken unchecked ("service_tier": 5 passed).
TEST(AnthropicRequest, ServiceTierIsAutoOrStandardOnly) {
  const std::string head = R"({"max_tokens":16,"messages":[{"role":"user","content":"x"}],)";
  for (const char* good : {R"("service_tier":"auto")", R"("service_tier":"standard_only")", R"("service_tier":null)"}) {
    ok(head + good + "}");
  }
  for (const char* bad : {R"("service_tier":5)", R"("service_tier":"priority")", R"("service_tier":["auto"])"}) {
    const std::string message = refused(head + bad + "}");
    EXPECT_EQ(message.rfind("service_tier must be auto or standard_only", 0), 0u) << bad << "\n  gave: " << message;
  }
}

TEST(AnthropicRequest, AFinalAssistantMessageIsAPrefill) {
  auto r = ok(R"({"max_tokens":8,"messages":[{"role":"user","content":"Name a colour."},
    {"role":"assistant","content":"The colour is"}]})");
  auto prompt = render_chat_request(r);
  ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
  EXPECT_TRUE(prompt->prefill);
  EXPECT_TRUE(prompt->text.ends_with("The colour is")) << prompt->text;
  // An empty final assistant message is allowed (it adds nothing).
  ok(R"({"max_tokens":8,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[]}]})");
}

TEST(AnthropicRequest, CountTokensNeedsNoMaxTokens) {
  auto r = ok(R"({"model":"m","messages":[{"role":"user","content":"x"}]})", MessagesRoute::kCountTokens);
  EXPECT_FALSE(r.gen.max_tokens.has_value());
  // Generation fields are not read there.
  ok(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"many"})", MessagesRoute::kCountTokens);
  // The prompt's fields are.
  EXPECT_EQ(refused(R"({"messages":[{"role":"system","content":"x"}]})", MessagesRoute::kCountTokens).rfind(
                "messages[0].role", 0),
            0u);
}

struct RefusalCase {
  const char* body;
  const char* starts_with;
};

TEST(AnthropicRequest, RefusalsNameTheField) {
  const std::string user = R"([{"role":"user","content":"x"}])";
  const RefusalCase cases[] = {
      {R"({"messages":[{"role":"user","content":"x"}]})", "max_tokens is required"},
      {R"({"max_tokens":0,"messages":[{"role":"user","content":"x"}]})", "max_tokens must be in [1, "},
      {R"({"max_tokens":"9","messages":[{"role":"user","content":"x"}]})", "max_tokens must be an integer"},
      {R"({"max_tokens":9})", "messages is required"},
      {R"({"max_tokens":9,"messages":{}})", "messages must be an array"},
      {R"({"max_tokens":9,"messages":[]})", "messages must contain at least one message"},
      {R"({"max_tokens":9,"messages":["hi"]})", "messages[0] must be an object"},
      {R"({"max_tokens":9,"messages":[{"content":"x"}]})", "messages[0].role is required"},
      {R"({"max_tokens":9,"messages":[{"role":"system","content":"x"}]})", "messages[0].role must be 'user' or"},
      {R"({"max_tokens":9,"messages":[{"role":"tool","content":"x"}]})", "messages[0].role must be 'user' or"},
      {R"({"max_tokens":9,"messages":[{"role":"user"}]})", "messages[0].content is required"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":""}]})", "messages[0].content must not be empty"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":[]}]})", "messages[0].content must not be empty"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":7}]})", "messages[0].content must be a string or"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":[{"text":"x"}]}]})",
       "messages[0].content[0].type is required"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":["x"]}]})",
       "messages[0].content[0] must be a content block"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":[{"type":"text"}]}]})",
       "messages[0].content[0].text is required"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":[{"type":"video_clip","x":1}]}]})",
       "messages[0].content[0].type 'video_clip' is not a block"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64",
         "media_type":"image/png","data":"AAAA"}}]}]})",
       "messages[0].content[0]: image blocks are not supported"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":[{"type":"document","source":{}}]}]})",
       "messages[0].content[0]: document blocks are not supported"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]}]})",
       "messages[0].content[0].type 'tool_use' is not a block"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[
         {"type":"tool_result","tool_use_id":"a","content":"r"}]}]})",
       "messages[1].content[0].type 'tool_result' is not a block"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":""},
         {"role":"user","content":"y"}]})",
       "messages[1].content must not be empty"},
      // tool_result without a matching tool_use.
      {R"({"max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a"}]}]})",
       "messages[0].content[0]: a tool_result must answer a tool_use block of the assistant message just before it, "
       "and no message comes before messages[0]"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"no calls"},
         {"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]}]})",
       "messages[2].content[0]: a tool_result must answer a tool_use block of the assistant message just before it, "
       "and messages[1] holds none"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[
         {"type":"tool_use","id":"t1","name":"f","input":{}}]},
         {"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"r"}]}]})",
       "messages[2].content[0].tool_use_id 't2' matches no tool_use block of messages[1]"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[
         {"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":"between"},
         {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]}]})",
       "messages[3].content[0]: a tool_result must answer"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[
         {"type":"tool_use","id":"t1","name":"f","input":{}}]},
         {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"},{"type":"tool_result","tool_use_id":"t1"}]}]})",
       "messages[2].content[1].tool_use_id 't1' is answered twice"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[
         {"type":"tool_use","id":"t1","name":"f","input":{}}]},
         {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{}}]}]}]})",
       "messages[2].content[0].content[0]: image blocks are not supported"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[
         {"type":"tool_use","id":"t1","name":"f","input":{}}]},
         {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":"yes"}]}]})",
       "messages[2].content[0].is_error must be true or false"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[
         {"type":"tool_use","id":"t1","name":"f","input":[1]}]}]})",
       "messages[1].content[0].input must be an object"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[
         {"type":"tool_use","name":"f","input":{}}]}]})",
       "messages[1].content[0].id is required"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[
         {"type":"tool_use","id":"t1","name":"f","input":{}},{"type":"tool_use","id":"t1","name":"g","input":{}}]}]})",
       "messages[1].content[1].id 't1' is the id of another tool_use block"},
      {R"({"max_tokens":9,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[
         {"type":"thinking"}]}]})",
       "messages[1].content[0].thinking is required"},
      {R"({"max_tokens":9,"system":5,"messages":[{"role":"user","content":"x"}]})", "system must be a string or"},
      {R"({"max_tokens":9,"system":[{"type":"image","source":{}}],"messages":[{"role":"user","content":"x"}]})",
       "system[0]: image blocks are not supported"},
      {R"({"max_tokens":9,"system":[{"type":"tool_use"}],"messages":[{"role":"user","content":"x"}]})",
       "system[0].type must be 'text'"},
      {R"({"max_tokens":9,"tools":{},"messages":[{"role":"user","content":"x"}]})", "tools must be an array"},
      {R"({"max_tokens":9,"tools":[{"name":"f"}],"messages":[{"role":"user","content":"x"}]})",
       "tools[0].input_schema is required"},
      {R"({"max_tokens":9,"tools":[{"name":"f","input_schema":"x"}],"messages":[{"role":"user","content":"x"}]})",
       "tools[0].input_schema must be a JSON Schema object"},
      {R"({"max_tokens":9,"tools":[{"name":"bad name","input_schema":{}}],"messages":[{"role":"user","content":"x"}]})",
       "tools[0].name 'bad name' must be 1-128 characters"},
      {R"({"max_tokens":9,"tools":[{"name":"f","input_schema":{}},{"name":"f","input_schema":{}}],
         "messages":[{"role":"user","content":"x"}]})",
       "tools[1].name 'f' is declared twice"},
      {R"({"max_tokens":9,"tools":[{"type":"web_search_20250305","name":"web_search"}],
         "messages":[{"role":"user","content":"x"}]})",
       "tools[0].type 'web_search_20250305' is one of Anthropic's server tools"},
      // Anthropic's MCP connector: the API would connect to these servers and call their tools;
      // this server does not, so a non-empty list is refused by name (before: ignored, and the
      // answer came without the tools the client gave it).
      {R"({"max_tokens":9,"mcp_servers":[{"type":"url","url":"https://example.com/mcp","name":"m"}],
         "messages":[{"role":"user","content":"x"}]})",
       "mcp_servers: remote MCP servers are not run by this server"},
      {R"({"max_tokens":9,"mcp_servers":{},"messages":[{"role":"user","content":"x"}]})",
       "mcp_servers must be an array"},
      {R"({"max_tokens":9,"tool_choice":"auto","messages":[{"role":"user","content":"x"}]})",
       "tool_choice must be an object"},
      {R"({"max_tokens":9,"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"x"}]})",
       "tool_choice 'any' asks for a tool call but tools is empty"},
      {R"({"max_tokens":9,"tool_choice":{"type":"sometimes"},"tools":[{"name":"f","input_schema":{}}],
         "messages":[{"role":"user","content":"x"}]})",
       "tool_choice.type must be 'auto', 'any', 'tool' or 'none'"},
      {R"({"max_tokens":9,"tool_choice":{"type":"tool"},"tools":[{"name":"f","input_schema":{}}],
         "messages":[{"role":"user","content":"x"}]})",
       "tool_choice.name is required"},
      {R"({"max_tokens":9,"tool_choice":{"type":"tool","name":"g"},"tools":[{"name":"f","input_schema":{}}],
         "messages":[{"role":"user","content":"x"}]})",
       "tool_choice.name 'g' is not a tool in tools"},
      {R"({"max_tokens":9,"tool_choice":{"type":"tool","name":"f"},"tools":[{"name":"f","input_schema":
         {"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}}],"messages":[{"role":"user","content":"x"}]})",
       "tools[0].input_schema.properties.a.$ref"},
      {R"({"max_tokens":9,"thinking":true,"messages":[{"role":"user","content":"x"}]})", "thinking must be an object"},
      {R"({"max_tokens":9,"thinking":{"type":"maybe"},"messages":[{"role":"user","content":"x"}]})",
       "thinking.type must be 'enabled', 'adaptive' or 'disabled'"},
      {R"({"max_tokens":9,"thinking":{"type":"enabled","budget_tokens":0},"messages":[{"role":"user","content":"x"}]})",
       "thinking.budget_tokens must be in [1024, "},
      {R"({"max_tokens":9,"temperature":3,"messages":[{"role":"user","content":"x"}]})", "temperature must be in"},
      {R"({"max_tokens":9,"top_p":1.5,"messages":[{"role":"user","content":"x"}]})", "top_p must be in"},
      {R"({"max_tokens":9,"top_k":-1,"messages":[{"role":"user","content":"x"}]})", "top_k must be in"},
      {R"({"max_tokens":9,"stop_sequences":"END","messages":[{"role":"user","content":"x"}]})",
       "stop_sequences must be an array"},
      {R"({"max_tokens":9,"stop_sequences":[1],"messages":[{"role":"user","content":"x"}]})",
       "stop_sequences[0] must be a string"},
      {R"({"max_tokens":9,"stream":"yes","messages":[{"role":"user","content":"x"}]})", "stream must be true or false"},
      {R"({"max_tokens":9,"model":7,"messages":[{"role":"user","content":"x"}]})", "model must be a string"},
  };
  for (const RefusalCase& c : cases) {
    const std::string message = refused(c.body);
    EXPECT_EQ(message.rfind(c.starts_with, 0), 0u) << c.body << "\n  gave: " << message;
  }
}

// Every node of `j`, as JSON pointers.
void collect_pointers(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>* out) {
  out->push_back(at);
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) collect_pointers(v, at / k, out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) collect_pointers(j[i], at / i, out);
  }
}

// Nothing a client sends makes the translation (or the rendering and planning after it)
// throw: a rich body with one node at a time replaced by values of every other type.
TEST(AnthropicRequest, MutatedBodiesNeverThrow) {
  const json base = json::parse(R"({"model":"m","max_tokens":2048,"system":[{"type":"text","text":"S"}],
    "tools":[{"name":"get_weather","description":"d","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],
    "tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true},
    "thinking":{"type":"enabled","budget_tokens":1024},"stop_sequences":["END"],"temperature":0.5,"top_p":0.9,"top_k":5,
    "messages":[{"role":"user","content":"Weather?"},
      {"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"ok"},
        {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}]},
      {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"snow"}],
        "is_error":false},{"type":"text","text":"and?"}]},
      {"role":"assistant","content":"It"}]})");
  ASSERT_TRUE(parse(base.dump()).ok());
  std::vector<json::json_pointer> pointers;
  collect_pointers(base, json::json_pointer(), &pointers);
  const json values[] = {nullptr, 0, -1, 1e300, 4294967296, "", "x", "tool_use", json::array(), json::object(),
                         json::array({nullptr}), json::parse(R"({"type":"text"})"),
                         json::parse(R"({"type":"tool_result","tool_use_id":"toolu_1"})"), true};
  const auto tok = test::shakes_tokenizer();
  RequestDefaults d = defaults();
  d.n_vocab = tok->n_vocab();
  size_t accepted = 0;
  for (const auto& p : pointers) {
    for (const json& v : values) {
      json body = base;
      if (p.empty()) {
        body = v;
      } else {
        body[p] = v;
      }
      for (MessagesRoute route : {MessagesRoute::kCreate, MessagesRoute::kCountTokens}) {
        EXPECT_NO_THROW({
          auto r = parse_messages_request(body, d, route);
          if (r.ok()) {
            ++accepted;
            auto plan = plan_chat(*r, *tok, PlanLimits{});
            (void)plan;
          }
        }) << p.to_string() << " = " << v.dump();
      }
    }
  }
  EXPECT_GT(accepted, 0u);
}

// As Anthropic's API: every tool_use of an assistant message is answered by a tool_result in
// the next message. A turn that leaves one unanswered used to be accepted and rendered as a
// call without its result (found by a hostile-client pass). A final assistant message's calls
// have nothing after them yet and stay accepted.
TEST(AnthropicRequest, ToolUseWithoutItsResultInTheNextMessageIsRefused) {
  const std::string call1 = R"({"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Oslo"}})";
  const std::string call2 = R"({"type":"tool_use","id":"t2","name":"get_weather","input":{"city":"Rome"}})";
  const std::string result1 = R"({"type":"tool_result","tool_use_id":"t1","content":"sun"})";
  const std::string user = R"({"role":"user","content":"x"})";
  auto assistant = [](const std::string& blocks) { return R"({"role":"assistant","content":[)" + blocks + "]}"; };
  auto user_blocks = [](const std::string& blocks) { return R"({"role":"user","content":[)" + blocks + "]}"; };
  // Followed by plain text only.
  std::string m = refused(with_tools("[" + user + "," + assistant(call1) + R"(,{"role":"user","content":"next"}])"));
  EXPECT_NE(m.find("messages[1]: tool_use ids were found without tool_result blocks in the next message: t1"),
            std::string::npos) << m;
  // One of two calls answered.
  m = refused(with_tools("[" + user + "," + assistant(call1 + "," + call2) + "," + user_blocks(result1) + "]"));
  EXPECT_NE(m.find("messages[1]: tool_use ids were found without tool_result blocks in the next message: t2"),
            std::string::npos) << m;
  EXPECT_EQ(m.find("t1"), std::string::npos) << m;
  // Followed by another assistant message.
  m = refused(with_tools("[" + user + "," + assistant(call1) + R"(,{"role":"assistant","content":"more"}])"));
  EXPECT_NE(m.find("messages[1]: tool_use ids were found without tool_result"), std::string::npos) << m;
  // The count_tokens route reads messages the same way.
  m = refused(with_tools("[" + user + "," + assistant(call1) + R"(,{"role":"user","content":"next"}])"),
              MessagesRoute::kCountTokens);
  EXPECT_NE(m.find("tool_use ids were found without tool_result"), std::string::npos) << m;
  // Answered (results in any order, text beside them), or the final message: accepted.
  ok(with_tools("[" + user + "," + assistant(call1 + "," + call2) + "," +
                user_blocks(R"({"type":"tool_result","tool_use_id":"t2"},{"type":"text","text":"and?"},)" + result1) +
                "]"));
  ok(with_tools("[" + user + "," + assistant(call1) + "]"));
}

// Thousands of tool_use / tool_result pairs in one turn (what the body's value limit allows)
// are read in linear time: each block looked its id up by a scan over the others, and a 2 MB
// body of 20000 pairs took 8 s of a server thread's CPU.
TEST(AnthropicRequest, ThousandsOfToolPairsAreReadInLinearTime) {
  constexpr int kPairs = 20000;
  json uses = json::array();
  json results = json::array();
  for (int i = 0; i < kPairs; ++i) {
    const std::string id = "toolu_" + std::to_string(i);
    uses.push_back({{"type", "tool_use"}, {"id", id}, {"name", "f"}});
    results.push_back({{"type", "tool_result"}, {"tool_use_id", id}});
  }
  const json body{{"max_tokens", 8},
                  {"messages", json::array({{{"role", "user"}, {"content", "x"}},
                                            {{"role", "assistant"}, {"content", uses}},
                                            {{"role", "user"}, {"content", results}}})}};
  const auto t0 = std::chrono::steady_clock::now();
  auto r = parse_messages_request(body, defaults(), MessagesRoute::kCreate);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->messages.size(), 2u + kPairs);
  EXPECT_EQ(r->messages.back().tool_call_id, "toolu_" + std::to_string(kPairs - 1));
  EXPECT_LT(seconds, 2.0) << "20000 tool_use/tool_result pairs took " << seconds << " s";
  // A duplicate among them is still found, naming the block.
  json dup = body;
  dup["messages"][2]["content"][kPairs - 1]["tool_use_id"] = "toolu_7";
  auto d = parse_messages_request(dup, defaults(), MessagesRoute::kCreate);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find(fmt::format("messages[2].content[{}].tool_use_id 'toolu_7' is answered twice",
                                                  kPairs - 1)),
            std::string::npos)
      << d.status().message();
}

// A tool's input_schema describes an object (Anthropic's API requires type "object"): another
// type was accepted, and a call forced to that tool wrote an object under a made-up key.
TEST(AnthropicRequest, InputSchemaOfAnotherTypeThanObjectIsRefused) {
  for (const char* type : {R"("string")", R"("array")", "5", "null", R"(["object","null"])"}) {
    const std::string body = std::string(R"({"max_tokens":9,"tools":[{"name":"f","input_schema":{"type":)") + type +
                             R"(}}],"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"x"}]})";
    const std::string m = refused(body);
    EXPECT_NE(m.find("tools[0].input_schema.type must be 'object'"), std::string::npos) << body << " -> " << m;
  }
  ok(R"({"max_tokens":9,"tools":[{"name":"f","input_schema":{"type":"object"}},{"name":"g","input_schema":{}}],
    "messages":[{"role":"user","content":"x"}]})");
}

// A chat completion field that the Messages route does not read was dropped without a word
// (response_format, guided_json and grammar gave free text, stop did not stop, n 3 one
// answer, max_completion_tokens did not cap). Each is refused by name, with the Messages
// field to send where there is one; neutral values pass. A chat-form tool is named as such
// (it was called "one of Anthropic's server tools").
TEST(AnthropicRequest, ChatFieldsItDoesNotReadAreRefusedByName) {
  const std::string head = R"({"max_tokens":16,"messages":[{"role":"user","content":"x"}],)";
  struct Case {
    std::string extra;
    std::string field;
    std::string instead;
  };
  const std::vector<Case> cases = {
      {R"("stop":["e"])", "stop", "stop_sequences"},
      {R"("max_completion_tokens":2)", "max_completion_tokens", "max_tokens"},
      {R"("reasoning_effort":"none")", "reasoning_effort", "thinking"},
      {R"("chat_template_kwargs":{"enable_thinking":false})", "chat_template_kwargs", "thinking"},
      {R"("response_format":{"type":"json_object"})", "response_format", "output_config.format"},
      {R"("guided_json":{"type":"object"})", "guided_json", ""},
      {R"("grammar":"root ::= x")", "grammar", ""},
      {R"("n":3)", "n", ""},
      {R"("seed":7)", "seed", ""},
      {R"("logprobs":true)", "logprobs", ""},
      {R"("ignore_eos":true)", "ignore_eos", ""},
      {R"("n_indent":2)", "n_indent", ""},
      {R"("lora":[{"id":0,"scale":0.5}])", "lora", ""},
      // The Responses route's own fields (they were dropped here without a word).
      {R"("instructions":"Be terse.")", "instructions", "system"},
      {R"("max_output_tokens":2)", "max_output_tokens", "max_tokens"},
      {R"("reasoning":{"effort":"none"})", "reasoning", "thinking"},
      {R"("text":{"format":{"type":"json_object"}})", "text", ""},
      {R"("input":"hi")", "input", "messages"},
  };
  for (const Case& c : cases) {
    for (MessagesRoute route : {MessagesRoute::kCreate, MessagesRoute::kCountTokens}) {
      auto r = parse(head + c.extra + "}", route);
      ASSERT_FALSE(r.ok()) << c.extra;
      EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << r.status().to_string();
      const std::string& m = r.status().message();
      EXPECT_EQ(m.rfind(c.field + " ", 0), 0u) << m;
      if (!c.instead.empty()) {
        EXPECT_NE(m.find("send " + c.instead), std::string::npos) << m;
      }
    }
  }
  ok(head + R"("n":1,"logprobs":false,"stop":[],"grammar":"","stream":false,"top_k":4,"metadata":{"user_id":"u"}})");
  ok(head + R"("t_max_predict_ms":-1,"n_indent":0,"n_cmpl":1,"lora":[],"post_sampling_probs":false})");
  const std::string chat_tool =
      refused(R"({"max_tokens":16,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function",
      "function":{"name":"f"}}]})");
  EXPECT_NE(chat_tool.find("chat completions form"), std::string::npos) << chat_tool;
}

// llama-server reads cache_prompt on its Anthropic route too; here `true` was a 400 ("a
// /v1/chat/completions field") and `false` passed unread. It is read as on the chat route:
// false computes the whole prompt, any other type is a 400 naming it.
TEST(AnthropicRequest, CachePromptIsReadAsOnTheChatRoute) {
  const std::string head = R"({"max_tokens":8,"messages":[{"role":"user","content":"hi"}])";
  EXPECT_TRUE(ok(head + "}").gen.cache_prompt);
  EXPECT_TRUE(ok(head + R"(,"cache_prompt":true})").gen.cache_prompt);
  EXPECT_FALSE(ok(head + R"(,"cache_prompt":false})").gen.cache_prompt);
  for (const char* bad : {R"("no")", "1", "[]"}) {
    auto r = parse(head + R"(,"cache_prompt":)" + bad + "}");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
    EXPECT_EQ(r.status().message().rfind("cache_prompt", 0), 0u) << r.status().message();
  }
}

// Anthropic's structured output: output_config.format (and the beta's output_format) is
// {"type": "json_schema", "schema": ...}. It was dropped without a word, so a client that
// asked for JSON following its schema got free text. It is the chat route's JSON constraint
// (the same schema compiler, errors naming the Anthropic field); output_config.effort is a
// hint, type-checked. Read on count_tokens too (the same body).
TEST(AnthropicRequest, OutputFormatIsTheJsonSchemaConstraint) {
  const std::string head = R"({"max_tokens":64,"messages":[{"role":"user","content":"x"}])";
  const std::string schema = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  for (MessagesRoute route : {MessagesRoute::kCreate, MessagesRoute::kCountTokens}) {
    EXPECT_EQ(ok(head + "}", route).gen.json_grammar, nullptr);
    EXPECT_NE(ok(head + R"(,"output_config":{"format":{"type":"json_schema","schema":)" + schema + "}}}", route)
                  .gen.json_grammar,
              nullptr);
    EXPECT_NE(ok(head + R"(,"output_format":{"type":"json_schema","schema":)" + schema + "}}", route).gen.json_grammar,
              nullptr);
    for (const char* effort : {"low", "medium", "high", "xhigh", "max"}) {
      const auto r = ok(head + R"(,"output_config":{"effort":")" + effort + R"("}})", route);
      EXPECT_EQ(r.gen.json_grammar, nullptr) << effort;
    }
    for (const char* neutral : {R"("output_config":null)", R"("output_config":{})", R"("output_format":null)",
                                R"("output_config":{"format":null,"effort":null})"}) {
      EXPECT_EQ(ok(head + "," + neutral + "}", route).gen.json_grammar, nullptr) << neutral;
    }
  }
  struct Case {
    std::string extra;
    std::string starts_with;
  };
  const std::vector<Case> cases = {
      {R"("output_config":"json")", "output_config must be an object"},
      {R"("output_config":{"format":"json"})", "output_config.format must be an object"},
      {R"("output_config":{"format":{"type":"json_object"}})", "output_config.format.type must be 'json_schema'"},
      {R"("output_config":{"format":{"schema":{"type":"object"}}})", "output_config.format.type must be 'json_schema'"},
      {R"("output_config":{"format":{"type":"json_schema"}})", "output_config.format.schema is required"},
      {R"("output_config":{"format":{"type":"json_schema","schema":"{}"}})", "output_config.format.schema must be an object"},
      {R"("output_config":{"format":{"type":"json_schema","schema":{"type":"object","not":{}}}})",
       "output_config.format.schema"},
      {R"("output_config":{"effort":"extreme"})", "output_config.effort must be"},
      {R"("output_config":{"effort":3})", "output_config.effort must be"},
      {R"("output_format":{"type":"text"})", "output_format.type must be 'json_schema'"},
      {R"("output_format":{"type":"json_schema","schema":[]})", "output_format.schema must be an object"},
      {std::string(R"("output_format":{"type":"json_schema","schema":)") + schema +
           R"(},"output_config":{"format":{"type":"json_schema","schema":)" + schema + "}}",
       "output_format and output_config.format"},
  };
  for (const Case& c : cases) {
    for (MessagesRoute route : {MessagesRoute::kCreate, MessagesRoute::kCountTokens}) {
      const std::string message = refused(head + "," + c.extra + "}", route);
      EXPECT_EQ(message.rfind(c.starts_with, 0), 0u) << c.extra << "\n  gave: " << message;
    }
  }
}

}  // namespace
}  // namespace gs::server
