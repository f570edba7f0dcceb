// Chat renderer edge cases found by comparing it with Jinja2 renderings of the official
// templates over generated message lists: each expected string is the template's output.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>

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

// Integers beyond 64 bits in a history call's arguments: json.loads keeps them exact and the
// template prints their digits; nlohmann read them as doubles, so the model saw
// "id:1.2345678901234568e+22" for the id 12345678901234567890123 it had written (and the
// re-rendered prompt no longer matched the cached one). Floats stay floats.
TEST(ChatFormatEdge, IntegersBeyond64BitsInCallArgumentsKeepTheirDigits) {
  const json messages = json::parse(R"([{"role":"user","content":"q"},
    {"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f",
      "arguments":"{\"id\": 12345678901234567890123, \"neg\": -99999999999999999999, \"list\": [18446744073709551616, 1, {\"deep\": -9223372036854775809}], \"ok\": 42, \"f\": 1e22, \"g\": 12345678901234567890123.0}"}}]},
    {"role":"tool","tool_call_id":"a","content":"ok"}])");
  ChatRenderOptions o;
  o.add_generation_prompt = false;
  EXPECT_EQ(render_json(messages, json::array(), o),
            "<|turn>user\nq<turn|>\n<|turn>model\n<|tool_call>call:f{f:1e+22,g:1.2345678901234568e+22,"
            "id:12345678901234567890123,list:[18446744073709551616,1,{deep:-9223372036854775809}],"
            "neg:-99999999999999999999,ok:42}<tool_call|><|tool_response>response:f{value:<|\"|>ok<|\"|>}"
            "<tool_response|>");
  // Python str() of a list holding one (a list-valued argument printed by str()).
  const json big = chat::parse_json_exact(R"([12345678901234567890123, "x"])");
  EXPECT_EQ(chat::python_str(big), "[12345678901234567890123, 'x']");
  EXPECT_TRUE(chat::parse_json_exact("{").is_discarded());
  EXPECT_TRUE(chat::parse_json_exact("1e400").is_discarded());
}

// dump_json_exact writes a value that came as JSON (an Anthropic tool_use input) back as text in
// which parse_json_exact finds the same value: big integers as their digits, the rest as
// nlohmann's compact dump.
TEST(ChatFormatEdge, DumpJsonExactWritesBigIntegersAsTheirDigits) {
  const std::string text =
      R"({"a":[18446744073709551616,-9223372036854775809,9007199254740993,7,{"b":123456789012345678901234567890}],)"
      R"("f":1e+20,"g":2.5,"s":"x\"y","t":true,"u":null,"e":{},"l":[]})";
  const json exact = chat::parse_json_exact(text);
  ASSERT_TRUE(exact.is_object());
  const std::string dumped = chat::dump_json_exact(exact);
  EXPECT_EQ(chat::parse_json_exact(dumped), exact) << dumped;
  EXPECT_NE(dumped.find("[18446744073709551616,-9223372036854775809,9007199254740993,7,"), std::string::npos)
      << dumped;
  EXPECT_NE(dumped.find(R"({"b":123456789012345678901234567890})"), std::string::npos) << dumped;
  // Without big integers it is nlohmann's dump.
  const json plain = json::parse(R"({"x":[1,2.5,"\u00e9"],"y":{"z":null}})");
  EXPECT_EQ(chat::dump_json_exact(plain), plain.dump());
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

// A function's "response" (Gemma's declaration of what the function returns) is printed by
// both templates after the parameters ("'response' in tool_data['function']", even when null);
// it was dropped, so such a tool's declaration differed from the template's. The template's
// own quirks hold: a description alone leaves ",}" and anything but an OBJECT type no type.
// A function's arguments are an object, so `parameters` whose own type admits no object is
// refused naming parameters.type (it was taken, and a forced call to it fell back to a looser
// constraint than the declared schema); one without a type, with a type the template reads as
// absent (null, "", [], as EmptyStringSchemaFieldsAreFalsy renders), or whose types include
// "object", is taken.
TEST(ChatFormatEdge, ParametersThatAdmitNoObjectAreRefused) {
  for (const char* type : {R"("string")", R"("bogus")", R"(["string","null"])", "5", "true"}) {
    const json tools = json::parse(std::string(R"([{"type":"function","function":{"name":"f","parameters":{"type":)") +
                                   type + "}}}]");
    auto t = chat_tools_from_json(tools);
    ASSERT_FALSE(t.ok()) << type;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message().rfind("tools[0].function.parameters.type: must be \"object\"", 0), 0u)
        << t.status().to_string();
  }
  for (const char* params : {R"({"type":"object"})", R"({"type":["object","null"]})", R"({"properties":{}})", "{}",
                             R"({"type":""})", R"({"type":null})", R"({"type":[]})"}) {
    const json tools = json::parse(std::string(R"([{"type":"function","function":{"name":"f","parameters":)") +
                                   params + "}}]");
    auto t = chat_tools_from_json(tools);
    EXPECT_TRUE(t.ok()) << params << ": " << t.status().to_string();
  }
}

TEST(ChatFormatEdge, FunctionResponseDeclarationIsPrinted) {
  const std::string head =
      "<|turn>system\n<|tool>declaration:f{description:<|\"|>d<|\"|>,parameters:{properties:{a:{type:<|\"|>STRING"
      "<|\"|>}},type:<|\"|>OBJECT<|\"|>}";
  const std::string tail = "<tool|><turn|>\n<|turn>user\nhi<turn|>\n";
  const std::pair<json, std::string> cases[] = {
      {json::parse(R"({"type":"object","description":"The weather"})"),
       ",response:{description:<|\"|>The weather<|\"|>,type:<|\"|>OBJECT<|\"|>}}"},
      {json::parse(R"({"description":"only a description"})"), ",response:{description:<|\"|>only a description<|\"|>,}"},
      {json::parse(R"({"type":"string"})"), ",response:{}"},
      {json(nullptr), ",response:{}"},
      {json("text"), ",response:{}"},
      {json::parse(R"({"type":"OBJECT"})"), ",response:{type:<|\"|>OBJECT<|\"|>}}"},
  };
  const json messages = json::parse(R"([{"role":"user","content":"hi"}])");
  for (const auto& [response, printed] : cases) {
    SCOPED_TRACE(response.dump());
    json tools = json::parse(R"([{"type":"function","function":{"name":"f","description":"d",
      "parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}])");
    tools[0]["function"]["response"] = response;
    for (const ChatTemplate variant : {ChatTemplate::kGemma4, ChatTemplate::kGemma4Interleaved}) {
      ChatRenderOptions o;
      o.add_generation_prompt = false;
      o.variant = variant;
      EXPECT_EQ(render_json(messages, tools, o), head + printed + tail);
    }
  }
  // Without the key, nothing is added.
  const json plain = json::parse(R"([{"type":"function","function":{"name":"f","description":"d",
      "parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}])");
  ChatRenderOptions o;
  o.add_generation_prompt = false;
  EXPECT_EQ(render_json(messages, plain, o), head + "}" + tail);
}

}  // namespace
}  // namespace gs::text
