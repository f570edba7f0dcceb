// Output parser robustness: tool-call forms a model writes besides the Gemma one (a JSON
// object, a namespaced name), braces that are not the call's own, and what surrounds a
// dropped turn header; each checked over every split into two chunks and 1-byte chunks.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "parser_test_util.h"
#include "text/output_parser.h"

namespace gs::text {
namespace {

using nlohmann::json;
using test_util::opts;
using test_util::parse_every_split;

ParserOptions with_tools(std::vector<std::string> names) {
  ParserOptions o = opts();
  o.tool_names = std::move(names);
  return o;
}

void expect_one_call(const std::string& text, const std::string& name, const json& args,
                     const std::string& content = "", const ParserOptions& o = opts()) {
  const ParsedMessage m = parse_every_split(text, o);
  ASSERT_EQ(m.tool_calls.size(), 1u) << text << " gave content [" << m.content << "]";
  EXPECT_EQ(m.tool_calls[0].name, name) << text;
  EXPECT_EQ(json::parse(m.tool_calls[0].arguments_json), args) << text;
  EXPECT_EQ(m.content, content) << text;
}

const json kParis = {{"city", "Paris"}};

// ---- a call written as a JSON object -------------------------------------------------------

// Models trained on other tool formats sometimes put an OpenAI-style object inside the
// Gemma markup: {"name": ..., "arguments": {...}}. It is the call it names.
TEST(OutputParserJsonCall, NameAndArgumentsObject) {
  expect_one_call(R"(<|tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}<tool_call|>)", "get_weather",
                  kParis);
  expect_one_call("<|tool_call>\n{\n  \"name\" : \"get_weather\",\n  \"arguments\" : {\"city\": \"Paris\"}\n}\n<tool_call|>",
                  "get_weather", kParis);
  expect_one_call(R"(<|tool_call>{"name":"get_weather","parameters":{"city":"Paris"}}<tool_call|>)", "get_weather",
                  kParis);
  expect_one_call(R"(<|tool_call>{"name": "get_time", "arguments": {}}<tool_call|>)", "get_time", json::object());
  // Nested values keep their JSON types.
  expect_one_call(R"(<|tool_call>{"name": "f", "arguments": {"a": [1, 2.5, true, null], "o": {"k": "v"}}}<tool_call|>)",
                  "f", json::parse(R"({"a":[1,2.5,true,null],"o":{"k":"v"}})"));
  // No close, text after it, then a second call in the Gemma form.
  expect_one_call(R"(<|tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}})", "get_weather", kParis);
  expect_one_call(R"(<|tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}<tool_call|>Done.)",
                  "get_weather", kParis, "Done.");
  const ParsedMessage two = parse_every_split(
      R"(<|tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}<tool_call|>)"
      R"(<|tool_call>call:get_time{tz:<|"|>CET<|"|>}<tool_call|>)");
  ASSERT_EQ(two.tool_calls.size(), 2u);
  EXPECT_EQ(two.tool_calls[0].arguments_json, R"({"city":"Paris"})");
  EXPECT_EQ(two.tool_calls[1].arguments_json, R"({"tz":"CET"})");
  EXPECT_EQ(two.content, "");
}

// OpenAI's own wire form: the arguments as a JSON string holding the object.
TEST(OutputParserJsonCall, ArgumentsAsAJsonString) {
  expect_one_call(R"(<|tool_call>{"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}<tool_call|>)",
                  "get_weather", kParis);
  expect_one_call(R"(<|tool_call>{"name": "f", "arguments": "{\"s\": \"a \\\"b\\\" {c}\"}"}<tool_call|>)", "f",
                  json({{"s", "a \"b\" {c}"}}));
  expect_one_call(R"(<|tool_call>{"name": "f", "arguments": ""}<tool_call|>)", "f", json::object());
  // Members after the arguments belong to the object, not to the content.
  expect_one_call(R"(<|tool_call>{"name": "f", "arguments": "{\"a\": 1}", "id": "c{1}"}<tool_call|>)", "f",
                  json({{"a", 1}}));
  expect_one_call(R"(<|tool_call>{"name": "f", "arguments": {"a": 1}, "type": "function"}<tool_call|>)", "f",
                  json({{"a", 1}}));
}

// Cut off at max_tokens anywhere inside: still one call with valid JSON once the name is
// known, the text as content before that.
TEST(OutputParserJsonCall, TruncatedAnywhere) {
  const std::string call = R"(<|tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}<tool_call|>)";
  const size_t args_at = call.find("\"arguments\"");
  // Every cut up to the close (a markup token is one token: it is never cut).
  for (size_t n = std::string("<|tool_call>").size() + 1; n <= call.find("<tool_call|>"); ++n) {
    const ParsedMessage m = parse_every_split(call.substr(0, n));
    if (n >= args_at + std::string("\"arguments\": {").size()) {
      ASSERT_EQ(m.tool_calls.size(), 1u) << call.substr(0, n);
      EXPECT_EQ(m.tool_calls[0].name, "get_weather");
      EXPECT_EQ(m.content, "") << call.substr(0, n);
    }
    EXPECT_FALSE(m.content.empty() && m.tool_calls.empty()) << call.substr(0, n);
  }
}

// An object that does not name a call is not one: its text is content, nothing lost.
TEST(OutputParserJsonCall, OtherObjectsAreContent) {
  for (const char* body : {R"({"foo": 1})", R"({"name": 42, "arguments": {}})", R"({"name": "f", "x": 1})",
                           R"({"arguments": {"a": 1}, "name": "f"})", "{name: f}"}) {
    const ParsedMessage m = parse_every_split(std::string("<|tool_call>") + body + "<tool_call|>");
    EXPECT_TRUE(m.tool_calls.empty()) << body;
    EXPECT_EQ(m.content, body);
  }
}

// ---- a namespaced name ------------------------------------------------------------------

// "call:default_api:get_weather{" (the namespace some Gemini-style prompts show) is a call of
// the declared tool the last part names. A declared name never holds ':' (OpenAI names are
// [a-zA-Z0-9_-]), so nothing declared is lost by the rule.
TEST(OutputParserNamespace, PrefixIsDroppedWhenTheRestIsDeclared) {
  const ParserOptions o = with_tools({"get_weather", "get_time"});
  expect_one_call(R"(<|tool_call>call:default_api:get_weather{city:<|"|>Paris<|"|>}<tool_call|>)", "get_weather",
                  kParis, "", o);
  expect_one_call(R"(<|tool_call>call:functions.api:tools:get_time{})", "get_time", json::object(), "", o);
  expect_one_call(R"(<|tool_call>{"name": "default_api:get_weather", "arguments": {"city": "Paris"}}<tool_call|>)",
                  "get_weather", kParis, "", o);
  // Without the opener, right after a thought (bug-case 7).
  const ParsedMessage m =
      parse_every_split(R"(<|channel>thought\nx<channel|>call:default_api:get_weather{city:<|"|>Paris<|"|>})", o);
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
}

// When the last part names no declared tool (or no list is given) the name stays as the model
// wrote it: the client sees what was called.
TEST(OutputParserNamespace, UndeclaredNamesStayWhole) {
  expect_one_call(R"(<|tool_call>call:default_api:get_weather{city:<|"|>Paris<|"|>}<tool_call|>)",
                  "default_api:get_weather", kParis, "", with_tools({"get_time"}));
  expect_one_call(R"(<|tool_call>call:default_api:get_weather{city:<|"|>Paris<|"|>}<tool_call|>)",
                  "default_api:get_weather", kParis);
  // A colon followed by anything but a name is no namespace (bug-case 8's pseudo-syntax).
  const ParsedMessage m = parse_every_split("<|tool_call>call:run:\nBEGIN_ARG:\nls\nEND_ARG\n", with_tools({"run"}));
  EXPECT_TRUE(m.tool_calls.empty());
  EXPECT_EQ(m.content, "call:run:\nBEGIN_ARG:\nls\nEND_ARG\n");
}

// ---- braces that are not the call's own ---------------------------------------------------

// A <|"|> string is taken verbatim, whatever brackets, quotes or commas it holds.
TEST(OutputParserBraces, GemmaStringsAreVerbatim) {
  expect_one_call(R"(<|tool_call>call:write{code:<|"|>int f() { return g({1, 2}); } }}]] "x", 'y'<|"|>,n:1}<tool_call|>)",
                  "write", json({{"code", "int f() { return g({1, 2}); } }}]] \"x\", 'y'"}, {"n", 1}}));
  expect_one_call(R"(<|tool_call>call:f{<|"|>a}b<|"|>:<|"|>}<|"|>}<tool_call|>)", "f", json({{"a}b", "}"}}));
}

// A '}' that closes the arguments early, with more members after it (the model closed a
// nested object twice), is a miscount: the members that follow belong to the same call.
TEST(OutputParserBraces, EarlyCloseFollowedByMoreMembers) {
  expect_one_call(R"(<|tool_call>call:f{a:{b:1}},c:2}<tool_call|>)", "f", json::parse(R"({"a":{"b":1},"c":2})"));
  expect_one_call(R"(<|tool_call>call:f{a:<|"|>x<|"|>}, b:<|"|>y<|"|>}<tool_call|>)", "f",
                  json({{"a", "x"}, {"b", "y"}}));
  expect_one_call(R"(<|tool_call>call:f{a:[1]}]}, b:2})", "f", json::parse(R"({"a":[1],"b":2})"));
}

// Brackets inside a bare (unquoted) value balance within it: "echo ${HOME}" is one value.
TEST(OutputParserBraces, BracketsBalanceInsideABareValue) {
  expect_one_call("<|tool_call>call:bash{command: echo ${HOME}}<tool_call|>", "bash",
                  json({{"command", "echo ${HOME}"}}));
  expect_one_call("<|tool_call>call:bash{command: awk '{print $1, $2}' f.txt,n:2}<tool_call|>", "bash",
                  json({{"command", "awk '{print $1, $2}' f.txt"}, {"n", 2}}));
  expect_one_call("<|tool_call>call:f{x: a[0], y: g(1, 2)}<tool_call|>", "f", json({{"x", "a[0]"}, {"y", "g(1, 2)"}}));
  // Unbalanced to the end: the call's close still ends it, the value keeps what was written.
  expect_one_call("<|tool_call>call:f{x: a{b<tool_call|>", "f", json({{"x", "a{b"}}));
}

// ---- a dropped turn header between two pieces of content -------------------------------------

// "<|turn>model\n" in the middle of the output starts a new message of the model's: the text
// on either side is two paragraphs, never run together into one word.
TEST(OutputParserTurn, DroppedHeaderSeparatesTheTextAroundIt) {
  EXPECT_EQ(parse_every_split("Hello.<|turn>model\nMore.").content, "Hello.\n\nMore.");
  // Whitespace already there is kept as written.
  EXPECT_EQ(parse_every_split("Hello.<|turn>model\n More.").content, "Hello. More.");
  EXPECT_EQ(parse_every_split("Hello.\n<|turn>model\nMore.").content, "Hello.\nMore.");
  // Nothing after it, or a call after it: no separator.
  EXPECT_EQ(parse_every_split("Hello.<|turn>model\n").content, "Hello.");
  const ParsedMessage c = parse_every_split("Hello.<|turn>model\n<|tool_call>call:f{a:1}<tool_call|>");
  EXPECT_EQ(c.content, "Hello.");
  ASSERT_EQ(c.tool_calls.size(), 1u);
  // At the start of the output there is nothing to separate.
  EXPECT_EQ(parse_every_split("<|turn>model\nHello.").content, "Hello.");
}

// ---- what stands between two calls ---------------------------------------------------------

// A comma between two calls (models list parallel calls) is not content; nor are the list
// brackets and commas of several JSON-form calls in one <|tool_call> block.
TEST(OutputParserSeparators, CommaBetweenCallsIsNotContent) {
  for (const char* text : {
           R"(<|tool_call>call:f{a:1},<|tool_call>call:g{b:2}<tool_call|>)",
           R"(<|tool_call>call:f{a:1}<tool_call|>, <|tool_call>call:g{b:2}<tool_call|>)",
           "<|tool_call>call:f{a:1}<tool_call|>,\n<|tool_call>call:g{b:2}<tool_call|>",
           R"(<|tool_call>[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {"b": 2}}]<tool_call|>)",
           R"(<|tool_call>{"name": "f", "arguments": {"a": 1}},{"name": "g", "arguments": {"b": 2}}<tool_call|>)",
       }) {
    const ParsedMessage m = parse_every_split(text);
    ASSERT_EQ(m.tool_calls.size(), 2u) << text << " gave content [" << m.content << "]";
    EXPECT_EQ(m.tool_calls[0].name, "f");
    EXPECT_EQ(m.tool_calls[0].arguments_json, R"({"a":1})");
    EXPECT_EQ(m.tool_calls[1].name, "g");
    EXPECT_EQ(m.tool_calls[1].arguments_json, R"({"b":2})");
    EXPECT_EQ(m.content, "") << text;
  }
  expect_one_call(R"(<|tool_call>[{"name": "f", "arguments": {"a": 1}}]<tool_call|>)", "f", json({{"a", 1}}));
  // A comma before prose is the prose's.
  expect_one_call("<|tool_call>call:f{a:1}<tool_call|>, and that is all.", "f", json({{"a", 1}}), ", and that is all.");
  expect_one_call("<|tool_call>call:f{a:1}, and that is all.", "f", json({{"a", 1}}), ", and that is all.");
}

}  // namespace
}  // namespace gs::text
