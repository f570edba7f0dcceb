// Chat renderer edge cases found by comparing it with Jinja2 renderings of the official
// templates over generated message lists: each expected string is the template's output.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "text/chat_format.h"
#include "text/chat_json.h"
#include "text/chat_values.h"

namespace gs::text {
namespace {

using nlohmann::json;

// Renders OpenAI-style JSON inputs; "ERROR ..." on failure.
std::string render_json(const json& messages, const json& tools, ChatRenderOptions options = {}) {
  auto m = chat_messages_from_json(messages);
  if (!m.ok()) return "ERROR " + m.status().to_string();
  auto t = chat_tools_from_json(tools);
  if (!t.ok()) return "ERROR " + t.status().to_string();
  auto r = render_chat(*m, *t, options);
  if (!r.ok()) return "ERROR " + r.status().to_string();
  return *r;
}

// Jinja truthiness: an empty string is false. A schema "description": "" or "type": "" is
// left out by the template, as an absent one is.
TEST(ChatFormatEdge, EmptyStringSchemaFieldsAreFalsy) {
  EXPECT_FALSE(chat::truthy(nullptr));
  const json empty_string = "";
  EXPECT_FALSE(chat::truthy(&empty_string));
  const json text = "x";
  EXPECT_TRUE(chat::truthy(&text));

  const json tools = json::parse(R"([
    {"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object",
      "properties":{"a":{"type":"string","description":""},
                    "b":{"type":"array","items":{"type":"string","description":""}},
                    "c":{"type":"string","nullable":false,"enum":[]}},"required":["a"]}}},
    {"type":"function","function":{"name":"g","description":"","parameters":{"type":"",
      "properties":{"x":{"type":"integer"}}}}}])");
  const json messages = json::parse(R"([{"role":"user","content":"hi"}])");
  ChatRenderOptions o;
  o.add_generation_prompt = false;
  EXPECT_EQ(render_json(messages, tools, o),
            "<|turn>system\n<|tool>declaration:f{description:<|\"|>d<|\"|>,parameters:{properties:{a:{type:<|\"|>"
            "STRING<|\"|>},b:{items:{description:<|\"|><|\"|>,type:<|\"|>STRING<|\"|>},type:<|\"|>ARRAY<|\"|>},c:{"
            "type:<|\"|>STRING<|\"|>}},required:[<|\"|>a<|\"|>],type:<|\"|>OBJECT<|\"|>}}<tool|><|tool>declaration:"
            "g{description:<|\"|><|\"|>,parameters:{properties:{x:{type:<|\"|>INTEGER<|\"|>}},}<tool|><turn|>\n"
            "<|turn>user\nhi<turn|>\n");
  o.variant = ChatTemplate::kGemma4Interleaved;
  EXPECT_EQ(render_json(messages, tools, o),
            "<|turn>system\n<|tool>declaration:f{description:<|\"|>d<|\"|>,parameters:{properties:{a:{type:<|\"|>"
            "STRING<|\"|>},b:{,items:{description:<|\"|><|\"|>,type:<|\"|>STRING<|\"|>}type:<|\"|>ARRAY<|\"|>},c:{"
            "type:<|\"|>STRING<|\"|>}},required:[<|\"|>a<|\"|>],type:<|\"|>OBJECT<|\"|>}}<tool|><|tool>declaration:"
            "g{description:<|\"|><|\"|>,parameters:{properties:{x:{type:<|\"|>INTEGER<|\"|>}},}<tool|><turn|>\n"
            "<|turn>user\nhi<turn|>\n");
}

}  // namespace
}  // namespace gs::text
