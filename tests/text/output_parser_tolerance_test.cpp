// Output parser tolerance: near-miss tool-call markup a model writes for the well-formed
// form (whitespace inside the header, miscounted closing brackets, a missing <tool_call|>)
// still gives the call the model meant, with nothing of its markup in content, and every
// split of the output into two chunks (and 1-byte chunks) gives the same events.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "parser_test_util.h"
#include "text/output_parser.h"

namespace gs::text {
namespace {

using nlohmann::json;
using test_util::assemble;
using test_util::describe;
using test_util::opts;
using test_util::parse_every_split;

void expect_one_call(const std::string& text, const std::string& name, const json& args,
                     const std::string& content = "") {
  const ParsedMessage m = parse_every_split(text);
  ASSERT_EQ(m.tool_calls.size(), 1u) << text << " gave content [" << m.content << "]";
  EXPECT_EQ(m.tool_calls[0].name, name) << text;
  EXPECT_EQ(json::parse(m.tool_calls[0].arguments_json), args) << text;
  EXPECT_EQ(m.content, content) << text;
}

const json kParis = {{"city", "Paris"}};

TEST(OutputParserTolerance, WhitespaceInsideTheCallHeader) {
  for (const char* header : {
           "call: get_weather{", "call:get_weather {", "call:get_weather\n{", "call :get_weather{",
           "call : get_weather {", "call:\n  get_weather\n{", "\ncall:get_weather{", "call get_weather{",
           "call:\tget_weather\t{",
       }) {
    expect_one_call(std::string("<|tool_call>") + header + "city:<|\"|>Paris<|\"|>}<tool_call|>", "get_weather",
                    kParis);
  }
  // The same without the <|tool_call> opener, right after a thought (bug-case 7).
  const ParsedMessage m =
      parse_every_split("<|channel>thought\nRun it.<channel|>call: bash {command:<|\"|>ls<|\"|>}");
  EXPECT_EQ(m.reasoning_content, "Run it.");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].name, "bash");
  EXPECT_EQ(json::parse(m.tool_calls[0].arguments_json), json({{"command", "ls"}}));
  EXPECT_EQ(m.content, "");
}

TEST(OutputParserTolerance, WhitespaceInsideTheArgumentsAndBeforeTheClose) {
  expect_one_call("<|tool_call>call:get_weather{\n  city : <|\"|>Paris<|\"|> ,\n  unit:<|\"|>c<|\"|>\n}\n<tool_call|>",
                  "get_weather", json({{"city", "Paris"}, {"unit", "c"}}));
}

// A name that begins with the word "call" is the name, whether or not `call:` precedes it.
TEST(OutputParserTolerance, NamesThatBeginWithCall) {
  expect_one_call("<|tool_call>callback{x:1}<tool_call|>", "callback", json({{"x", 1}}));
  expect_one_call("<|tool_call>call_user{id:7}<tool_call|>", "call_user", json({{"id", 7}}));
  expect_one_call("<|tool_call>call:call_user{id:7}<tool_call|>", "call_user", json({{"id", 7}}));
}

TEST(OutputParserTolerance, ClosersAfterCompleteArgumentsAreDropped) {
  const std::string call = "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}";
  for (const char* tail : {"}<tool_call|>", "}", "}}<tool_call|>", " } }\n<tool_call|>", "}]<tool_call|>", "]"}) {
    expect_one_call(call + tail, "get_weather", kParis);
  }
  expect_one_call(call + "}<tool_call|>It is sunny.", "get_weather", kParis, "It is sunny.");
  // Then a second call: both are whole, nothing between them reaches content.
  const ParsedMessage two = parse_every_split(call + "}}<tool_call|><|tool_call>call:get_time{tz:<|\"|>CET<|\"|>}}");
  ASSERT_EQ(two.tool_calls.size(), 2u);
  EXPECT_EQ(two.tool_calls[0].arguments_json, R"({"city":"Paris"})");
  EXPECT_EQ(two.tool_calls[1].name, "get_time");
  EXPECT_EQ(two.tool_calls[1].arguments_json, R"({"tz":"CET"})");
  EXPECT_EQ(two.content, "");
  // A nested object's extra closer ends the arguments; the one left over is dropped too.
  expect_one_call("<|tool_call>call:f{a:{b:1}}}<tool_call|>", "f", json::parse(R"({"a":{"b":1}})"));
}

// Generation may end (or a new call or text begin) without the <tool_call|> close.
TEST(OutputParserTolerance, MissingCallClose) {
  const std::string call = "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}";
  expect_one_call(call, "get_weather", kParis);
  expect_one_call(call + "\n", "get_weather", kParis);
  expect_one_call(call + "\nIt is sunny.", "get_weather", kParis, "It is sunny.");
  const ParsedMessage two = parse_every_split(call + "<|tool_call>call:get_time{}");
  ASSERT_EQ(two.tool_calls.size(), 2u);
  EXPECT_EQ(two.tool_calls[1].arguments_json, "{}");
}

TEST(OutputParserTolerance, ProseAfterTheOpenerIsStillContent) {
  EXPECT_EQ(parse_every_split("<|tool_call>call: me maybe<tool_call|>").content, "call: me maybe");
  EXPECT_EQ(parse_every_split("<|tool_call>call : the office\n{ later }").content, "call : the office\n{ later }");
  EXPECT_TRUE(parse_every_split("<|tool_call>call: me maybe<tool_call|>").tool_calls.empty());
  EXPECT_EQ(parse_every_split("<|channel>thought\nx<channel|>call: me\nmaybe").content, "call: me\nmaybe");
}

TEST(OutputParserTolerance, RepairsAreCountedOncePerCall) {
  OutputParser p(opts());
  p.feed("<|tool_call>call: f{a:1}}}<tool_call|><|tool_call>call:g{b:2}<tool_call|>");
  p.finish();
  EXPECT_EQ(p.stats().tool_calls, 2);
  EXPECT_EQ(p.stats().tool_calls_repaired, 1);
  OutputParser q(opts());
  q.feed("<|tool_call>call:f{a:1}");
  q.feed("}");
  q.feed("}<tool_call|>");
  q.finish();
  EXPECT_EQ(q.stats().tool_calls_repaired, 1);
}

// A bare number beyond a double's range (1e400) is its text as a string, as NaN and 0x10 are:
// JSON readers hold numbers as doubles, and nlohmann (this server's request parser, which
// refused such a call replayed in the history, and the Messages API's tool_use input, which
// lost every argument) refuses it. Numbers a double holds, the smallest and largest included,
// and those too small for one (read as 0 by every reader) stay numbers.
TEST(OutputParserTolerance, NumbersBeyondADoubleAreStrings) {
  const std::string call = "<|tool_call>call:f{a:1e400,b:-2E+308,c:+1e999,d:123e4567890123,e:1e308,"
                           "f:-1.7976931348623157e308,g:1e-400,h:4.9e-324,i:0.5,j:12345678901234567890123}<tool_call|>";
  const json want = json::parse(
      R"({"a":"1e400","b":"-2E+308","c":"+1e999","d":"123e4567890123","e":1e308,"f":-1.7976931348623157e308,)"
      R"("g":0.0,"h":4.9e-324,"i":0.5,"j":12345678901234567890123})");
  const ParsedMessage m = parse_every_split(call);
  ASSERT_EQ(m.tool_calls.size(), 1u) << m.content;
  const json args = json::parse(m.tool_calls[0].arguments_json, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(args.is_discarded()) << m.tool_calls[0].arguments_json;
  EXPECT_EQ(args, want) << m.tool_calls[0].arguments_json;
  // A digit string of 400 digits, and the JSON form's arguments object, likewise.
  const std::string big(401, '9');
  expect_one_call("<|tool_call>call:f{n:" + big + "}<tool_call|>", "f", json({{"n", big}}));
  expect_one_call(R"(<|tool_call>{"name": "f", "arguments": {"n": 1e400, "m": [2e308, 3]}}<tool_call|>)", "f",
                  json({{"n", "1e400"}, {"m", json::array({"2e308", 3})}}));
}

// ---- a turn opener inside the output ------------------------------------------------------

bool ends_turn(const std::string& text, const ParserOptions& o = opts()) {
  const auto ev = test_util::feed_split(text, {}, o);
  return !ev.empty() && ev.back().kind == ParserEventKind::kEndOfTurn;
}

// The model's own header ("<|turn>model\n", at the start or repeated later) is dropped.
TEST(OutputParserTurn, ModelHeaderIsDroppedAnywhere) {
  EXPECT_EQ(parse_every_split("<|turn>model\nHello.").content, "Hello.");
  EXPECT_EQ(parse_every_split("Hello.<|turn>model\n More.").content, "Hello. More.");
  EXPECT_EQ(parse_every_split("<|turn>assistant\nHello.").content, "Hello.");
  EXPECT_FALSE(ends_turn("Hello.<|turn>model\nMore."));
  // Inside a thought it closes the thought; what follows is the answer.
  const ParsedMessage m = parse_every_split("<|channel>thought\nPlan.<|turn>model\nAnswer.");
  EXPECT_EQ(m.reasoning_content, "Plan.");
  EXPECT_EQ(m.content, "Answer.");
  // And a call may follow it.
  const ParsedMessage c = parse_every_split("<|turn>model\n<|tool_call>call:f{a:1}<tool_call|>");
  ASSERT_EQ(c.tool_calls.size(), 1u);
  EXPECT_EQ(c.content, "");
}

// Any other turn (the model starts writing the user's next message) ends the output: none
// of it, role line included, is the model's answer.
TEST(OutputParserTurn, AnotherRolesTurnEndsTheOutput) {
  for (const char* role : {"user", "system", "tool", "developer", "", "User"}) {
    const std::string text = std::string("Paris.<|turn>") + role + "\nAnd Rome?<|channel>thought\nx<channel|>y";
    const ParsedMessage m = parse_every_split(text);
    EXPECT_EQ(m.content, "Paris.") << role;
    EXPECT_EQ(m.reasoning_content, "") << role;
    EXPECT_TRUE(ends_turn(text)) << role;
  }
  // Inside a thought, after a call, and with a held stop-string prefix before it.
  const ParsedMessage r = parse_every_split("<|channel>thought\nPlan.<|turn>user\nhi");
  EXPECT_EQ(r.reasoning_content, "Plan.");
  EXPECT_EQ(r.content, "");
  const ParsedMessage c = parse_every_split("<|tool_call>call:f{a:1}<tool_call|><|turn>user\nok");
  ASSERT_EQ(c.tool_calls.size(), 1u);
  EXPECT_EQ(c.content, "");
  const ParsedMessage open_call = parse_every_split("<|tool_call>call:f{a:<|\"|>x<|turn>user\nok");
  ASSERT_EQ(open_call.tool_calls.size(), 1u);
  EXPECT_EQ(json::parse(open_call.tool_calls[0].arguments_json), json({{"a", "x"}}));
  EXPECT_EQ(parse_every_split("Hi STO<|turn>user\nSTOP", opts(true, true, {"STOP"})).content, "Hi STO");
  // Later input is ignored.
  OutputParser p(opts());
  MessageAccumulator acc;
  acc.add(p.feed("Done.<|turn>user\n"));
  EXPECT_TRUE(p.turn_ended());
  EXPECT_FALSE(p.stopped());
  EXPECT_TRUE(p.feed("more text").empty());
  EXPECT_TRUE(p.finish().empty());
  EXPECT_EQ(acc.message().content, "Done.");
}

}  // namespace
}  // namespace gs::text
