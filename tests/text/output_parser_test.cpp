// Output parser: reasoning, tool calls, stop strings and the bug-cases that apply to them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <set>
#include <string>
#include <limits>
#include <thread>
#include <vector>

#include "parser_test_util.h"
#include "text/output_parser.h"

namespace gs::text {
namespace {

using nlohmann::json;
using test_util::assemble;
using test_util::describe;
using test_util::feed_chunks;
using test_util::has_markup;
using test_util::opts;

ParsedMessage parse(std::string_view text, const ParserOptions& o = opts()) { return parse_output(text, o); }

// Parses in one piece and in 1-, 7- and 50-byte chunks; all must agree. Returns the message.
ParsedMessage parse_all_ways(std::string_view text, const ParserOptions& o = opts()) {
  const auto whole = feed_chunks(text, text.size() + 1, o);
  for (const size_t chunk : {1, 7, 50}) {
    const auto ev = feed_chunks(text, chunk, o);
    EXPECT_EQ(describe(merge_events(ev)), describe(merge_events(whole))) << "chunk " << chunk << " of: " << text;
  }
  const ParsedMessage m = assemble(whole);
  EXPECT_FALSE(has_markup(m.content)) << "content has markup: " << m.content;
  EXPECT_FALSE(has_markup(m.reasoning_content)) << "reasoning has markup: " << m.reasoning_content;
  test_util::expect_valid_calls(m, std::string(text));
  return m;
}

json args_of(const ParsedMessage& m, size_t i) {
  EXPECT_LT(i, m.tool_calls.size());
  if (i >= m.tool_calls.size()) return nullptr;
  return json::parse(m.tool_calls[i].arguments_json, nullptr, false);
}

// ---- plain content and reasoning -------------------------------------------------------

TEST(OutputParser, PlainContentPassesThrough) {
  const auto m = parse_all_ways("Hello, world! a < b and c > d; <b>bold</b> <|notmarkup|>");
  EXPECT_EQ(m.content, "Hello, world! a < b and c > d; <b>bold</b> <|notmarkup|>");
  EXPECT_TRUE(m.reasoning_content.empty());
  EXPECT_TRUE(m.tool_calls.empty());
}

// The continuation of an assistant prefill keeps its leading whitespace (" day" after "It is
// a fine"); an answer of its own drops it.
TEST(OutputParser, PrefillContinuationKeepsLeadingWhitespace) {
  ParserOptions o = opts();
  EXPECT_EQ(parse_all_ways("  fine day", o).content, "fine day");
  o.continues_content = true;
  EXPECT_EQ(parse_all_ways(" fine day", o).content, " fine day");
  EXPECT_EQ(parse_all_ways("\n\nNext paragraph.", o).content, "\n\nNext paragraph.");
}

TEST(OutputParser, ReasoningThenAnswer) {
  const auto m = parse_all_ways("<|channel>thought\nThe user wants 6*7.\nIt is 42.\n<channel|>The answer is 42.");
  EXPECT_EQ(m.reasoning_content, "The user wants 6*7.\nIt is 42.");
  EXPECT_EQ(m.content, "The answer is 42.");
}

TEST(OutputParser, OutputEndingRightAfterTheChannelOpener) {
  OutputParser p(opts());
  MessageAccumulator acc;
  acc.add(p.feed("Answer.<|channel>"));
  acc.add(p.finish());
  EXPECT_EQ(acc.message().content, "Answer.");
  EXPECT_EQ(p.stats().reasoning_blocks, 1);
  EXPECT_EQ(p.stats().empty_reasoning_blocks, 1);
  EXPECT_EQ(parse_all_ways("---\n<|channel>").reasoning_content, "---");
}

TEST(OutputParser, ThoughtLabelIsAWordOfItsOwn) {
  EXPECT_EQ(parse_all_ways("<|channel>thoughtful plan<channel|>x").reasoning_content, "thoughtful plan");
  EXPECT_EQ(parse_all_ways("<|channel>thought<channel|>x").reasoning_content, "");
  EXPECT_EQ(parse_all_ways("<|channel>thought").reasoning_content, "");
  EXPECT_EQ(parse_all_ways("<|channel>thought plan<channel|>x").reasoning_content, "plan");
}

TEST(OutputParser, LeadingTurnHeaderAndTrailingTurnCloseAreDropped) {
  const auto m = parse_all_ways("<|turn>model\n<|channel>thought\nhmm<channel|>Hi there.<turn|>");
  EXPECT_EQ(m.reasoning_content, "hmm");
  EXPECT_EQ(m.content, "Hi there.");
}

TEST(OutputParser, ParseReasoningOffPutsThoughtTextInContentWithoutMarkup) {
  const auto m = parse_all_ways("<|channel>thought\nthinking<channel|>answer", opts(true, false));
  EXPECT_TRUE(m.reasoning_content.empty());
  EXPECT_EQ(m.content, "thinkinganswer");
}

TEST(OutputParser, StartsInReasoning) {
  auto o = opts();
  o.starts_in_reasoning = true;
  const auto m = parse_all_ways("still thinking\n<channel|>\n\nDone.", o);
  EXPECT_EQ(m.reasoning_content, "still thinking");
  EXPECT_EQ(m.content, "Done.");
}

// The continuation of a reasoning prefill (a thought the prompt left open): reasoning from
// the first byte, its leading whitespace kept as a continuation's is; the answer after the
// closer drops its own; a closer right away is no empty block (the prompt gave the text).
TEST(OutputParser, ContinuedReasoningKeepsLeadingWhitespace) {
  auto o = opts();
  o.continues_reasoning = true;
  const auto m = parse_all_ways(" so 42.\n<channel|>\n\nThe answer is 42.", o);
  EXPECT_EQ(m.reasoning_content, " so 42.");
  EXPECT_EQ(m.content, "The answer is 42.");
  OutputParser p(o);
  EXPECT_TRUE(p.in_reasoning());
  MessageAccumulator acc;
  acc.add(p.feed("<channel|>Done."));
  acc.add(p.finish());
  EXPECT_EQ(acc.message().reasoning_content, "");
  EXPECT_EQ(acc.message().content, "Done.");
  EXPECT_EQ(p.stats().empty_reasoning_blocks, 0);
  EXPECT_EQ(p.stats().reasoning_blocks, 1);
}

// A prefill whose text ends right after "<|channel>" (breaker round 28): the output goes on
// inside that block, and may write its "thought" label first, which is markup, not text.
TEST(OutputParser, AReasoningLabelPendingIsMarkup) {
  auto o = opts();
  o.continues_reasoning = true;
  o.reasoning_label_pending = true;
  auto m = parse_all_ways("thought\nLet me see.<channel|>\n\nThe answer.", o);
  EXPECT_EQ(m.reasoning_content, "Let me see.");
  EXPECT_EQ(m.content, "The answer.");
  m = parse_all_ways("Let me see.<channel|>The answer.", o);  // no label: text of the block
  EXPECT_EQ(m.reasoning_content, "Let me see.");
  EXPECT_EQ(m.content, "The answer.");
  m = parse_all_ways("thoughtful words<channel|>Done.", o);  // a word, not the label
  EXPECT_EQ(m.reasoning_content, "thoughtful words");
  EXPECT_EQ(m.content, "Done.");
  m = parse_all_ways("<channel|>Done.", o);
  EXPECT_EQ(m.reasoning_content, "");
  EXPECT_EQ(m.content, "Done.");
  OutputParser p(o);
  EXPECT_TRUE(p.in_reasoning());
}

TEST(OutputParser, InReasoningTracksTheBlock) {
  OutputParser p(opts());
  p.feed("<|channel>thou");
  EXPECT_TRUE(p.in_reasoning());
  p.feed("ght\nabc");
  EXPECT_TRUE(p.in_reasoning());
  p.feed("<channel|>x");
  EXPECT_FALSE(p.in_reasoning());
}

// Bug-case 17: reasoning never leaks into content, streamed or not, after tool results.
TEST(OutputParserBugCases, Case17ReasoningAfterToolResultDoesNotLeak) {
  const std::string out =
      "<|channel>thought\nThe user is asking about memory search; the tool said no results.<channel|>"
      "I found no results for that topic.";
  const auto m = parse_all_ways(out);
  EXPECT_EQ(m.content, "I found no results for that topic.");
  EXPECT_EQ(m.content.find("thought"), std::string::npos);
  EXPECT_EQ(m.reasoning_content, "The user is asking about memory search; the tool said no results.");
}

// Bug-case 18: junk before the thought opener must not reach (JSON) content.
TEST(OutputParserBugCases, Case18JunkBeforeThoughtIsNotContent) {
  const auto m = parse_all_ways("---\n<|channel>thought\nok<channel|>{\"name\":\"Ann\"}");
  const auto j = json::parse(m.content, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << m.content;
  EXPECT_EQ(j, json({{"name", "Ann"}}));
  EXPECT_EQ(m.reasoning_content, "---\nok");
}

TEST(OutputParser, PreambleWithoutThoughtStaysContent) {
  EXPECT_EQ(parse_all_ways("---\nTitle").content, "---\nTitle");
  EXPECT_EQ(parse_all_ways("## Heading\ntext").content, "## Heading\ntext");
  EXPECT_EQ(parse_all_ways("  ---  ").content, "---  ");
}

// Bug-case 20: the cap hits during reasoning: all text is reasoning, content is empty (the
// server reports finish_reason "length").
TEST(OutputParserBugCases, Case20TruncatedReasoningStaysReasoning) {
  const auto m = parse_all_ways("<|channel>thought\nThe capital of Australia is a common trick question; many");
  EXPECT_EQ(m.content, "");
  EXPECT_EQ(m.reasoning_content, "The capital of Australia is a common trick question; many");
}

// Bug-case 23: empty thought markers (thinking off) never show.
TEST(OutputParserBugCases, Case23EmptyThoughtBlocksVanish) {
  for (const std::string out : {"<|channel>thought\n<channel|>Hello!", "<|channel>thought <channel|>Hello!",
                                "<|channel><channel|>Hello!", "<|channel>thought\n\n  \n<channel|>\n\nHello!"}) {
    OutputParser p(opts());
    MessageAccumulator acc;
    acc.add(p.feed(out));
    acc.add(p.finish());
    EXPECT_EQ(acc.message().content, "Hello!") << out;
    EXPECT_EQ(acc.message().reasoning_content, "") << out;
    EXPECT_EQ(p.stats().empty_reasoning_blocks, 1) << out;
    parse_all_ways(out);
  }
}

// ---- tool calls ---------------------------------------------------------------------------

TEST(OutputParser, GemmaToolCall) {
  const auto m = parse_all_ways(
      "<|channel>thought\nNeed weather.<channel|><|tool_call>call:get_weather{city:<|\"|>Tokyo<|\"|>,"
      "unit:<|\"|>c<|\"|>}<tool_call|>");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(m.tool_calls[0].arguments_json, R"({"city":"Tokyo","unit":"c"})");
  EXPECT_EQ(m.tool_calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(m.tool_calls[0].id.size(), 29u);
  EXPECT_EQ(m.content, "");
  EXPECT_EQ(m.reasoning_content, "Need weather.");
}

TEST(OutputParser, NestedValuesAndEscaping) {
  const auto m = parse_all_ways(
      "<|tool_call>call:f{s:<|\"|>line1\nline2 \"q\" \\ tab\t<|\"|>,n:[1,-2.5,1e3,{k:true}],o:{a:{b:null}},"
      "e:[],u:<|\"|>日本語 😀<|\"|>}<tool_call|>");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  const json want = {{"s", "line1\nline2 \"q\" \\ tab\t"},
                     {"n", json::array({1, -2.5, 1e3, {{"k", true}}})},
                     {"o", {{"a", {{"b", nullptr}}}}},
                     {"e", json::array()},
                     {"u", "日本語 😀"}};
  EXPECT_EQ(args_of(m, 0), want);
}

// Bug-case 1: ordinary double quotes instead of <|"|>.
TEST(OutputParserBugCases, Case1OrdinaryQuotes) {
  const auto m = parse_all_ways("<|tool_call>call:save_note{text: \"The user's name is Ada Lovelace.\"}<tool_call|>");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].name, "save_note");
  EXPECT_EQ(args_of(m, 0), json({{"text", "The user's name is Ada Lovelace."}}));
  EXPECT_EQ(m.content, "");
}

// Bug-case 3: bare numbers, booleans and null keep their JSON types.
TEST(OutputParserBugCases, Case3BareValuesAreTyped) {
  const auto m = parse_all_ways(
      "<|tool_call>call:set_volume{level:42,muted:false,device:null,gain:-3.5,big:1e3,ok:True,none:None,"
      "plus:+7,word:loud}<tool_call|>");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  const json a = args_of(m, 0);
  EXPECT_EQ(a, json::parse(R"({"level":42,"muted":false,"device":null,"gain":-3.5,"big":1e3,"ok":true,)"
                           R"("none":null,"plus":7,"word":"loud"})"));
  EXPECT_TRUE(a["level"].is_number_integer());
  EXPECT_TRUE(a["gain"].is_number_float());
  EXPECT_TRUE(a["big"].is_number());
  EXPECT_TRUE(a["muted"].is_boolean());
  EXPECT_TRUE(a["device"].is_null());
}

// Bug-case 4: JSON / Python quotes inside arrays and objects lose their quote characters.
TEST(OutputParserBugCases, Case4JsonAndPythonQuotesInArrays) {
  const auto m = parse_all_ways("<|tool_call>call:load{refs:[\"ds_1\",'ds_2'],opts:{\"mode\": \"fast\"}}<tool_call|>");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(args_of(m, 0), json::parse(R"({"refs":["ds_1","ds_2"],"opts":{"mode":"fast"}})"));
}

TEST(OutputParser, JsonEscapesInDoubleQuotedStrings) {
  const auto m = parse_all_ways(R"(<|tool_call>call:f{a:"x\"y\\z\n\u00e9\ud83d\ude00",b:'it\'s'}<tool_call|>)");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(args_of(m, 0), json({{"a", "x\"y\\z\né😀"}, {"b", "it's"}}));
}

// Bug-case 6: an opener without `call` is recovered.
TEST(OutputParserBugCases, Case6OpenerWithoutCall) {
  const auto m = parse_all_ways("<|tool_call>:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(args_of(m, 0), json({{"city", "Paris"}}));
  EXPECT_FALSE(m.content.empty() && m.tool_calls.empty());
}

// Bug-case 7: the call follows <channel|> directly, without <|tool_call>.
TEST(OutputParserBugCases, Case7CallRightAfterChannelClose) {
  const auto m = parse_all_ways(
      "<|channel>thought\nLet me look at the file.<channel|>call:bash{command:<|\"|>cat /srv/app/main.c<|\"|>}");
  EXPECT_EQ(m.reasoning_content, "Let me look at the file.");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].name, "bash");
  EXPECT_EQ(args_of(m, 0), json({{"command", "cat /srv/app/main.c"}}));
  EXPECT_EQ(m.content, "");
}

TEST(OutputParser, CallWordInOrdinaryContentIsContent) {
  EXPECT_EQ(parse_all_ways("call me maybe").content, "call me maybe");
  EXPECT_EQ(parse_all_ways("<|channel>thought\nx<channel|>call:ok then").content, "call:ok then");
  EXPECT_EQ(parse_all_ways("I will call:get_weather{city:x} now").content, "I will call:get_weather{city:x} now");
}

// Bug-case 8: unparseable pseudo-syntax comes out as content, and repeated empty thought
// blocks are counted.
TEST(OutputParserBugCases, Case8PseudoSyntaxBecomesContent) {
  std::string out = "<|tool_call>call:run_terminal_command:\nBEGIN_ARG:\nls\nEND_ARG\n";
  for (int i = 0; i < 5; ++i) out += "<|channel>thought\n<channel|>";
  OutputParser p(opts());
  MessageAccumulator acc;
  acc.add(p.feed(out));
  acc.add(p.finish());
  const auto& m = acc.message();
  EXPECT_TRUE(m.tool_calls.empty());
  EXPECT_EQ(m.content, "call:run_terminal_command:\nBEGIN_ARG:\nls\nEND_ARG\n");
  EXPECT_EQ(p.stats().empty_reasoning_blocks, 5);
  EXPECT_EQ(p.stats().tool_calls_unparsed, 1);
  parse_all_ways(out);
}

TEST(OutputParser, OpenerFollowedByProseIsContent) {
  const auto m = parse_all_ways("<|tool_call>Sorry, I cannot call tools.<tool_call|>");
  EXPECT_TRUE(m.tool_calls.empty());
  EXPECT_EQ(m.content, "Sorry, I cannot call tools.");
}

// Bug-case 13: tool calls not parsed (tool_choice none): no markup in content.
TEST(OutputParserBugCases, Case13NoMarkupWhenToolsDisabled) {
  const auto m = parse_all_ways(
      "<|channel>thought\n<channel|><|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
      opts(/*tools=*/false));
  EXPECT_TRUE(m.tool_calls.empty());
  EXPECT_EQ(m.content, "call:get_weather{city:\"Paris\"}");
  const auto plain = parse_all_ways("It is sunny in Paris today.<turn|>", opts(false));
  EXPECT_EQ(plain.content, "It is sunny in Paris today.");
}

// Bug-case 14: two calls in one chunk; every chunking gives the same calls and arguments.
TEST(OutputParserBugCases, Case14TwoCallsInOneChunk) {
  const std::string out =
      "<|tool_call>call:get_station{id:<|\"|>ST-1142<|\"|>}<tool_call|><|tool_call>call:get_weather{city:"
      "<|\"|>Lyon<|\"|>}<tool_call|>";
  const auto m = parse_all_ways(out);
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].name, "get_station");
  EXPECT_EQ(m.tool_calls[1].name, "get_weather");
  EXPECT_EQ(m.tool_calls[0].arguments_json, R"({"id":"ST-1142"})");
  EXPECT_EQ(m.tool_calls[1].arguments_json, R"({"city":"Lyon"})");
  EXPECT_NE(m.tool_calls[0].id, m.tool_calls[1].id);
  // Each call's first event carries its index, id and name; arguments follow under the
  // same index, and the first call ends before the second begins.
  const auto ev = feed_chunks(out, 7, opts());
  int begun = 0;
  int current = -1;
  for (const auto& e : ev) {
    if (e.kind == ParserEventKind::kToolCallBegin) {
      EXPECT_EQ(e.tool_index, begun);
      EXPECT_FALSE(e.tool_id.empty());
      EXPECT_FALSE(e.tool_name.empty());
      EXPECT_EQ(current, -1);
      current = e.tool_index;
      ++begun;
    } else if (e.kind == ParserEventKind::kToolCallArgs) {
      EXPECT_EQ(e.tool_index, current);
    } else if (e.kind == ParserEventKind::kToolCallEnd) {
      EXPECT_EQ(e.tool_index, current);
      current = -1;
    }
  }
  EXPECT_EQ(begun, 2);
}

TEST(OutputParser, ArgumentsStreamWhileAStringValueArrives) {
  OutputParser p(opts());
  auto ev = p.feed("<|tool_call>call:write{content:<|\"|>hello wor");
  std::string args;
  bool begun = false;
  for (const auto& e : ev) {
    if (e.kind == ParserEventKind::kToolCallBegin) begun = true;
    if (e.kind == ParserEventKind::kToolCallArgs) args += e.text;
  }
  EXPECT_TRUE(begun);
  EXPECT_EQ(args, R"({"content":"hello wor)");
}

TEST(OutputParser, TruncatedCallIsClosedIntoValidJson) {
  const auto m = parse_all_ways("<|tool_call>call:f{a:<|\"|>unfinished text");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(args_of(m, 0), json({{"a", "unfinished text"}}));
  const auto m2 = parse_all_ways("<|tool_call>call:f{a:[1,{b:");
  ASSERT_EQ(m2.tool_calls.size(), 1u);
  EXPECT_EQ(args_of(m2, 0), json::parse(R"({"a":[1,{"b":null}]})"));
}

// A forced call (tool_choice "required" with several tools: the prompt ends in
// "<|tool_call>call:" and the model writes the name) cut by max_tokens before its name is
// complete: neither a call nor content. The content was "call:get_w", the prompt's `call:`
// included, where decision 0016 promises that the forced markup never reaches content.
// Without forced_call the same text is the model's own, and comes out as content as before.
TEST(OutputParser, ForcedCallCutInItsNameLeavesNoContent) {
  ParserOptions forced = opts();
  forced.forced_call = true;
  forced.tool_names = {"get_weather", "get_time"};
  for (const std::string cut : {"", "get", "get_w", "get_weather", "get_weather ", "default_api:"}) {
    const std::string text = "<|tool_call>call:" + cut;
    const ParsedMessage m = test_util::parse_every_split(text, forced);
    EXPECT_EQ(m.content, "") << text;
    EXPECT_TRUE(m.tool_calls.empty()) << text;
  }
  EXPECT_EQ(test_util::parse_every_split("<|tool_call>call:get_w").content, "call:get_w");
  // A complete forced call is unchanged; a later call cut in its name is the model's own.
  const ParsedMessage two = test_util::parse_every_split(
      "<|tool_call>call:get_time{city:<|\"|>Oslo<|\"|>}<tool_call|><|tool_call>call:get_w", forced);
  ASSERT_EQ(two.tool_calls.size(), 1u);
  EXPECT_EQ(two.tool_calls[0].name, "get_time");
  EXPECT_EQ(two.content, "call:get_w");
}

// A call held by the output's constraint to a declared function's opener (tool_choice auto's lazy
// call grammar, a call instead of a structured value, the calls after a forced one:
// ParserOptions::calls_held) that the output's end cuts inside its header: neither a call nor
// content, wherever the cut falls ("c", "call", "call:", "call:get_w"), after text or after a
// whole call too. Before (decision 0067) the header's text came out as content. Text after an
// opener that cannot begin a call is still content (bug-case 8), and a call complete up to its
// name is still a call; without calls_held the cut header is the model's own text as before.
TEST(OutputParser, AHeldCallCutInItsHeaderLeavesNoContent) {
  ParserOptions held = opts();
  held.calls_held = true;
  held.tool_names = {"get_weather", "get_time"};
  const std::string call = "call:get_weather";
  for (size_t n = 0; n <= call.size(); ++n) {
    const std::string cut = call.substr(0, n);
    const ParsedMessage m = test_util::parse_every_split("<|tool_call>" + cut, held);
    EXPECT_EQ(m.content, "") << cut;
    EXPECT_TRUE(m.tool_calls.empty()) << cut;
    const ParsedMessage after_text = test_util::parse_every_split("Let me look.<|tool_call>" + cut, held);
    EXPECT_EQ(after_text.content, "Let me look.") << cut;
    EXPECT_TRUE(after_text.tool_calls.empty()) << cut;
    const ParsedMessage second = test_util::parse_every_split(
        "<|tool_call>call:get_time{city:<|\"|>Oslo<|\"|>}<tool_call|><|tool_call>" + cut, held);
    EXPECT_EQ(second.content, "") << cut;
    ASSERT_EQ(second.tool_calls.size(), 1u) << cut;
    EXPECT_EQ(second.tool_calls[0].name, "get_time");
    const ParsedMessage in_thought = test_util::parse_every_split("<|channel>thought\nHm<|tool_call>" + cut, held);
    EXPECT_EQ(in_thought.content, "") << cut;
    EXPECT_EQ(in_thought.reasoning_content, "Hm") << cut;
    EXPECT_TRUE(in_thought.tool_calls.empty()) << cut;
  }
  const ParsedMessage named = test_util::parse_every_split("<|tool_call>call:get_weather{", held);
  ASSERT_EQ(named.tool_calls.size(), 1u);
  EXPECT_EQ(named.tool_calls[0].name, "get_weather");
  EXPECT_EQ(test_util::parse_every_split("<|tool_call>Sorry, no tools.", held).content, "Sorry, no tools.");
  EXPECT_EQ(test_util::parse_every_split("<|tool_call>call:get_w").content, "call:get_w");
}

// A cut (max_tokens) inside a marker of the call syntax: the marker's bytes are no part of a
// key or value. Inside a string's closing <|"|> the value is the text before it; inside an
// opening one there is no value yet (null). Found by a break test: a forced call cut by
// max_tokens 6 gave {"city":"<|\""}.
TEST(OutputParser, CutInsideAMarkerLeavesNoMarkerBytesInTheArguments) {
  EXPECT_EQ(args_of(parse_all_ways("<|tool_call>call:f{city:<|\""), 0), json({{"city", nullptr}}));
  EXPECT_EQ(args_of(parse_all_ways("<|tool_call>call:f{city:<"), 0), json({{"city", nullptr}}));
  EXPECT_EQ(args_of(parse_all_ways("<|tool_call>call:f{city:<|\"|>Paris<|\"|"), 0), json({{"city", "Paris"}}));
  EXPECT_EQ(args_of(parse_all_ways("<|tool_call>call:f{city:<|\"|>Paris<"), 0), json({{"city", "Paris"}}));
  EXPECT_EQ(args_of(parse_all_ways("<|tool_call>call:f{n:1<tool_ca"), 0), json({{"n", 1}}));
  EXPECT_EQ(args_of(parse_all_ways("<|tool_call>call:f{<|\"|>odd key<|\""), 0), json({{"odd key", nullptr}}));
  // Every cut of a call: no key or value ever holds a marker's first byte (the call's text
  // has none of its own), the same whole and streamed (parse_all_ways).
  const std::string call =
      "<|tool_call>call:f{city:<|\"|>Paris<|\"|>,days:[1,<|\"|>x<|\"|>],<|\"|>odd key<|\"|>:{a:<|\"|>v<|\"|>},"
      "t:true}<tool_call|>";
  const std::function<void(const json&, const std::string&)> no_marker = [&](const json& v, const std::string& at) {
    if (v.is_string()) {
      EXPECT_EQ(v.get<std::string>().find('<'), std::string::npos) << at << ": " << v.dump();
    }
    if (v.is_object()) {
      for (const auto& [k, x] : v.items()) {
        EXPECT_EQ(k.find('<'), std::string::npos) << at << ": key " << k;
        no_marker(x, at);
      }
    }
    if (v.is_array()) {
      for (const auto& x : v) no_marker(x, at);
    }
  };
  for (size_t n = std::string("<|tool_call>call:f{").size(); n <= call.size(); ++n) {
    const std::string cut = call.substr(0, n);
    const auto m = parse_all_ways(cut);
    ASSERT_EQ(m.tool_calls.size(), 1u) << cut;
    no_marker(args_of(m, 0), cut);
  }
}

TEST(OutputParser, RepairsMalformedArguments) {
  struct Case {
    const char* out;
    const char* want;
  };
  const Case cases[] = {
      {"<|tool_call>call:f{a:1 b:2}<tool_call|>", R"({"a":1,"b":2})"},
      {"<|tool_call>call:f{a:1,}<tool_call|>", R"({"a":1})"},
      {"<|tool_call>call:f{a:,b:2}<tool_call|>", R"({"a":null,"b":2})"},
      {"<|tool_call>call:f{a=1}<tool_call|>", R"({"a":1})"},
      {"<|tool_call>call:f{a:[1,2}<tool_call|>", R"({"a":[1,2]})"},
      {"<|tool_call>call:f{command: ls -la /tmp}<tool_call|>", R"({"command":"ls -la /tmp"})"},
      {"<|tool_call>call:f{}<tool_call|>", R"({})"},
      {"<|tool_call>call:f{a:1<tool_call|>", R"({"a":1})"},
      {"<|tool_call>call:f{<|\"|>odd key<|\"|>:<|\"|>v<|\"|>}<tool_call|>", R"({"odd key":"v"})"},
  };
  for (const auto& c : cases) {
    const auto m = parse_all_ways(c.out);
    ASSERT_EQ(m.tool_calls.size(), 1u) << c.out;
    EXPECT_EQ(args_of(m, 0), json::parse(c.want)) << c.out;
  }
}

TEST(OutputParser, ContentBeforeAndAfterCalls) {
  const auto m = parse_all_ways(
      "Let me check.\n<|tool_call>call:get_time{tz:<|\"|>UTC<|\"|>}<tool_call|><|tool_response>");
  EXPECT_EQ(m.content, "Let me check.\n");
  ASSERT_EQ(m.tool_calls.size(), 1u);
}

TEST(OutputParser, ToolCallInsideUnclosedThought) {
  const auto m = parse_all_ways("<|channel>thought\nI'll call it.<|tool_call>call:f{x:1}<tool_call|>");
  EXPECT_EQ(m.reasoning_content, "I'll call it.");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(args_of(m, 0), json({{"x", 1}}));
}

TEST(OutputParser, IdsDependOnSeedAndIndexOnly) {
  const std::string out = "<|tool_call>call:a{}<tool_call|><|tool_call>call:b{}<tool_call|>";
  const auto m1 = parse(out);
  const auto m2 = parse(out);
  ASSERT_EQ(m1.tool_calls.size(), 2u);
  EXPECT_EQ(m1.tool_calls[0].id, m2.tool_calls[0].id);
  auto o = opts();
  o.tool_call_id_seed = 99;
  EXPECT_NE(parse(out, o).tool_calls[0].id, m1.tool_calls[0].id);
  // Random seeds (0) still give distinct ids within one message.
  o.tool_call_id_seed = 0;
  const auto r = parse(out, o);
  EXPECT_NE(r.tool_calls[0].id, r.tool_calls[1].id);
}

// Every character of an id is random: ids of different seeds share no tail (one 64-bit draw
// for 12 digits once left the last ones equal in every id).
TEST(OutputParser, IdsAreRandomToTheLastCharacter) {
  const std::string out = "<|tool_call>call:a{}<tool_call|>";
  std::set<std::string> tails, heads;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    auto o = opts();
    o.tool_call_id_seed = seed * 7919;
    const auto m = parse(out, o);
    ASSERT_EQ(m.tool_calls.size(), 1u);
    const std::string& id = m.tool_calls[0].id;
    ASSERT_EQ(id.size(), 29u) << id;  // "call_" and 24 characters
    heads.insert(id.substr(5, 6));
    tails.insert(id.substr(id.size() - 6));
  }
  EXPECT_EQ(heads.size(), 40u);
  EXPECT_EQ(tails.size(), 40u);
}

// Bug-case 9: odd sampler output (XTC, drafts) deviating from the format degrades to
// content or a repaired call; the parser has no error path at all.
TEST(OutputParserBugCases, Case9FormatDeviationsNeverFail) {
  const char* outputs[] = {
      "<|tool_call>call:get_weather{city:<|\"|>Par<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
      "<|tool_call>call:get_weather{{city::<|\"|>Oslo<|\"|>}}}<tool_call|>",
      "<|tool_call>call:get weather{city:Oslo}<tool_call|>",
      "<|tool_call><|tool_call>call:get_weather{}<tool_call|><tool_call|>",
      "<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<turn|>",
      "<|channel>thought\n<|channel>thought\nweather<channel|><channel|>Sunny.",
  };
  for (const char* out : outputs) {
    const auto m = parse_all_ways(out);
    EXPECT_FALSE(m.content.empty() && m.tool_calls.empty()) << out;
  }
}

// Bug-case 12: complex nested arguments still give one valid JSON object.
TEST(OutputParserBugCases, Case12NestedFilterArguments) {
  const auto m = parse_all_ways(
      "<|tool_call>call:find_orders{filter:{$and:[{field:<|\"|>total<|\"|>,gt:100},{field:<|\"|>city<|\"|>,"
      "eq:<|\"|>Paris<|\"|>},{placed:{$gte:<|\"|>2025-01-01<|\"|>,$lt:<|\"|>2026-01-01<|\"|>}}]}}<tool_call|>");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(args_of(m, 0), json::parse(R"({"filter":{"$and":[{"field":"total","gt":100},{"field":"city","eq":"Paris"},)"
                                       R"({"placed":{"$gte":"2025-01-01","$lt":"2026-01-01"}}]}})"));
}

// Bug-case 15: three parallel calls, streamed by many parsers at once (one per request, as
// the server runs them on many threads): every reassembled argument string equals the
// non-streamed one.
TEST(OutputParserBugCases, Case15ConcurrentStreamsReassembleExactly) {
  std::string out;
  for (int i = 0; i < 3; ++i) {
    out += "<|tool_call>call:read_file{path:<|\"|>/srv/data/file_" + std::to_string(i) + ".txt<|\"|>}<tool_call|>";
  }
  const ParsedMessage want = parse(out);
  ASSERT_EQ(want.tool_calls.size(), 3u);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 200; ++rep) {
        const auto got = assemble(test_util::feed_random(out, static_cast<uint32_t>(t * 1000 + rep), opts()));
        if (got.tool_calls.size() != 3) {
          ++mismatches;
          continue;
        }
        for (size_t i = 0; i < 3; ++i) {
          if (got.tool_calls[i].arguments_json != want.tool_calls[i].arguments_json ||
              got.tool_calls[i].name != want.tool_calls[i].name || got.tool_calls[i].id != want.tool_calls[i].id) {
            ++mismatches;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// Bug-case 24: a reasoning budget forces the block closed (the engine injects <channel|>);
// the reasoning so far stays reasoning and the answer after it is content.
TEST(OutputParserBugCases, Case24ForcedReasoningClose) {
  OutputParser p(opts());
  MessageAccumulator acc;
  acc.add(p.feed("<|channel>thought\nIs 221 prime? 221 = 13 * 1"));
  ASSERT_TRUE(p.in_reasoning());
  acc.add(p.feed(markup::kChannelClose));  // injected by the engine at the budget
  EXPECT_FALSE(p.in_reasoning());
  acc.add(p.feed("No: 221 = 13 \xC3\x97 17."));
  acc.add(p.finish());
  EXPECT_EQ(acc.message().reasoning_content, "Is 221 prime? 221 = 13 * 1");
  EXPECT_EQ(acc.message().content, "No: 221 = 13 \xC3\x97 17.");
}

// ---- stop strings -----------------------------------------------------------------------

TEST(OutputParser, StopStringIsNeverEmittedInPart) {
  const auto o = opts(true, true, {"STOP", "\n\n"});
  for (const size_t chunk : {1, 2, 3, 100}) {
    const auto ev = feed_chunks("Hello STO and more STOP never", chunk, o);
    const auto m = assemble(ev);
    EXPECT_EQ(m.content, "Hello STO and more ") << chunk;
    ASSERT_TRUE(m.stop.has_value());
    EXPECT_EQ(*m.stop, "STOP");
    for (const auto& e : ev) {
      if (e.kind != ParserEventKind::kStop) {
        EXPECT_EQ(e.text.find("STOP"), std::string::npos);
      }
    }
  }
  EXPECT_EQ(parse("a\nb\n\nc", o).content, "a\nb");
}

TEST(OutputParser, StopStringsApplyToContentNotReasoning) {
  const auto o = opts(true, true, {"\n\n"});
  const auto m = parse_all_ways("<|channel>thought\npara 1\n\npara 2<channel|>Answer.\n\nMore.", o);
  EXPECT_EQ(m.reasoning_content, "para 1\n\npara 2");
  EXPECT_EQ(m.content, "Answer.");
}

TEST(OutputParser, EarliestEndingStopWins) {
  const auto o = opts(true, true, {"abcd", "bc"});
  const auto m = parse_all_ways("xxabcd", o);
  EXPECT_EQ(m.content, "xxa");
  EXPECT_EQ(*m.stop, "bc");
}

TEST(OutputParser, HeldStopPrefixIsReleasedAtEndAndAtMarkup) {
  const auto o = opts(true, true, {"STOP"});
  EXPECT_EQ(parse_all_ways("ends with ST", o).content, "ends with ST");
  const auto m = parse_all_ways("ST<|tool_call>call:f{}<tool_call|>", o);
  EXPECT_EQ(m.content, "ST");
  EXPECT_EQ(m.tool_calls.size(), 1u);
}

TEST(OutputParser, InputAfterStopIsIgnored) {
  OutputParser p(opts(true, true, {"END"}));
  auto ev = p.feed("doneEND more");
  EXPECT_TRUE(p.stopped());
  EXPECT_TRUE(p.feed("anything <|tool_call>call:f{}").empty());
  EXPECT_TRUE(p.finish().empty());
  EXPECT_EQ(assemble(ev).content, "done");
}

TEST(OutputParser, StrayMarkupNeverReachesContent) {
  const auto m = parse_all_ways(
      "A<turn|>B<|tool_response>C<tool_response|>D<|think|>E<|tool>F<tool|>G<tool_call|>H<channel|>I<|\"|>J");
  EXPECT_EQ(m.content, "ABCDEFGHI\"J");
}

TEST(OutputParser, PartialMarkupAtTheEndIsText) {
  EXPECT_EQ(parse_all_ways("value <|chan").content, "value <|chan");
  EXPECT_EQ(parse_all_ways("x <tool_ca").content, "x <tool_ca");
}

}  // namespace
}  // namespace gs::text

namespace gs::text {
namespace {

// Each content byte says where in the input it came from (decision 0055): the answer's text
// from its own bytes, whatever the chunking, never from the thinking or the markup; and no
// later content byte comes from before undecided_from().
TEST(OutputParserSources, ContentBytesComeFromTheirInputBytes) {
  const std::string input = "<|channel>thought\nHmm, a thought.<channel|>\n\n  Paris, fair sir.";
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{7}, input.size()}) {
    OutputParser parser;
    std::string content;
    std::vector<uint64_t> sources;
    uint64_t undecided = 0;
    auto take = [&](const std::vector<ParserEvent>& events) {
      for (const ParserEvent& e : events) {
        if (e.kind != ParserEventKind::kContent) continue;
        ASSERT_EQ(e.sources.size(), e.text.size());
        for (uint64_t at : e.sources) EXPECT_GE(at, undecided) << "chunk " << chunk;
        content += e.text;
        sources.insert(sources.end(), e.sources.begin(), e.sources.end());
      }
    };
    for (size_t i = 0; i < input.size(); i += chunk) {
      take(parser.feed(std::string_view(input).substr(i, chunk)));
      undecided = parser.undecided_from();
    }
    take(parser.finish());
    EXPECT_EQ(parser.undecided_from(), std::numeric_limits<uint64_t>::max());
    ASSERT_EQ(content, "Paris, fair sir.") << chunk;
    const size_t at = input.find("Paris");
    for (size_t k = 0; k < content.size(); ++k) EXPECT_EQ(sources[k], at + k) << "chunk " << chunk << " byte " << k;
  }
}

// Text the parser writes itself is placed at the input it read then: the quote of <|"|> at
// that markup, the blank line between two turns' text at the second's first byte.
TEST(OutputParserSources, WrittenTextIsPlacedAtTheInputItStandsFor) {
  const std::string input = "Say <|\"|>hi<|\"|><|turn>model\nagain";
  OutputParser parser;
  std::vector<ParserEvent> events = parser.feed(input);
  for (ParserEvent& e : parser.finish()) events.push_back(std::move(e));
  std::string content;
  std::vector<uint64_t> sources;
  for (const ParserEvent& e : events) {
    if (e.kind != ParserEventKind::kContent) continue;
    content += e.text;
    sources.insert(sources.end(), e.sources.begin(), e.sources.end());
  }
  ASSERT_EQ(content, "Say \"hi\"\n\nagain");
  EXPECT_EQ(sources[4], input.find("<|\"|>"));
  EXPECT_EQ(sources[7], input.rfind("<|\"|>"));
  EXPECT_EQ(sources[8], input.find("again"));
  EXPECT_EQ(sources[9], input.find("again"));
  EXPECT_EQ(sources[10], input.find("again"));
}

}  // namespace
}  // namespace gs::text
