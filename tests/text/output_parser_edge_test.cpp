// Output parser edge cases: argument escapes the model gets wrong, checked over every
// chunking of the output.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "parser_test_util.h"
#include "text/output_parser.h"

namespace gs::text {
namespace {

using nlohmann::json;

// The one call's arguments, after checking that 1-byte chunks give the same message.
json only_call_args(const std::string& text) {
  const ParserOptions o = test_util::opts();
  const ParsedMessage whole = parse_output(text, o);
  const ParsedMessage bytes = test_util::assemble(test_util::feed_chunks(text, 1, o));
  EXPECT_EQ(bytes.content, whole.content);
  EXPECT_EQ(bytes.tool_calls.size(), whole.tool_calls.size());
  if (whole.tool_calls.size() != 1) {
    ADD_FAILURE() << "expected one call in " << text;
    return json();
  }
  EXPECT_EQ(bytes.tool_calls[0].arguments_json, whole.tool_calls[0].arguments_json);
  return json::parse(whole.tool_calls[0].arguments_json);
}

// A backslash that starts no escape of JSON or Python ("\d" in a regex, "\U" in a Windows
// path) is the backslash itself: models under-escape these, and dropping it changed the
// value ("\d+" became "d+"). Real escapes are still decoded.
TEST(OutputParserEdge, UnknownEscapesKeepTheBackslash) {
  EXPECT_EQ(only_call_args(R"(<|tool_call>call:grep{pattern:"\d+\.\w",path:'C:\Users\me'}<tool_call|>)"),
            json::parse(R"({"pattern":"\\d+\\.\\w","path":"C:\\Users\\me"})"));
  EXPECT_EQ(only_call_args(R"(<|tool_call>call:f{a:"x\ny\t\"q\"\\ \/ \u00e9 \uZZ",b:'it\'s'}<tool_call|>)"),
            json::parse(R"({"a":"x\ny\t\"q\"\\ / \u00e9 \\uZZ","b":"it's"})"));
  // Inside <|"|> strings a backslash is never an escape.
  EXPECT_EQ(only_call_args(R"(<|tool_call>call:f{a:<|"|>\d \n<|"|>}<tool_call|>)"),
            json::parse(R"({"a":"\\d \\n"})"));
}

}  // namespace
}  // namespace gs::text
