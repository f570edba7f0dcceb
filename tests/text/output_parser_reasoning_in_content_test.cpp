// Output parser with ParserOptions::reasoning_in_content (llama-server's reasoning_format none
// and deepseek-legacy, decision 0034): each reasoning block written into the content at its
// place, as its markup and text, while every other event stays as without the option.
#include <gtest/gtest.h>

#include <string>

#include "parser_test_util.h"
#include "text/output_parser.h"

namespace gs::text {
namespace {

using test_util::assemble;
using test_util::describe;
using test_util::feed_chunks;
using test_util::merge_text_runs;
using test_util::opts;

ParserOptions in_content(ParserOptions o = opts()) {
  o.reasoning_in_content = true;
  return o;
}

// Parses in one piece and in 1-, 2-, 7- and 50-byte chunks (all must agree on the text of
// each kind between other events), with the option; the reasoning, the calls and the stop
// must be the same as without it. Returns the message.
ParsedMessage parse_in_content(std::string_view text, const ParserOptions& base = opts()) {
  const ParserOptions o = in_content(base);
  const auto whole = feed_chunks(text, text.size() + 1, o);
  for (const size_t chunk : {1, 2, 7, 50}) {
    EXPECT_EQ(describe(merge_text_runs(feed_chunks(text, chunk, o))), describe(merge_text_runs(whole)))
        << "chunk " << chunk << " of: " << text;
  }
  const ParsedMessage m = assemble(whole);
  const ParsedMessage without = parse_output(text, base);
  EXPECT_EQ(m.reasoning_content, without.reasoning_content) << text;
  EXPECT_EQ(m.tool_calls.size(), without.tool_calls.size()) << text;
  for (size_t i = 0; i < m.tool_calls.size() && i < without.tool_calls.size(); ++i) {
    EXPECT_EQ(m.tool_calls[i].name, without.tool_calls[i].name) << text;
    EXPECT_EQ(m.tool_calls[i].arguments_json, without.tool_calls[i].arguments_json) << text;
  }
  EXPECT_EQ(m.stop, without.stop) << text;
  return m;
}

TEST(OutputParserReasoningInContent, OpenerIsTheCanonicalSpelling) {
  EXPECT_EQ(kReasoningOpenMarkup, std::string(markup::kChannelOpen) + std::string(markup::kThoughtLabel) + "\n");
}

TEST(OutputParserReasoningInContent, BlockThenAnswer) {
  const auto m = parse_in_content("<|channel>thought\nThe user wants 6*7.\nIt is 42.\n<channel|>The answer is 42.");
  EXPECT_EQ(m.content, "<|channel>thought\nThe user wants 6*7.\nIt is 42.<channel|>The answer is 42.");
  EXPECT_EQ(m.reasoning_content, "The user wants 6*7.\nIt is 42.");
}

// What the model wrote comes back as it was where it wrote the canonical form.
TEST(OutputParserReasoningInContent, CanonicalOutputComesBackUnchanged) {
  for (const std::string text : {"<|channel>thought\nPlan: greet.<channel|>Hello!",
                                 "Intro.<|channel>thought\nA<channel|>Middle.<|channel>thought\nB<channel|>End.",
                                 "<|channel>thought\n<channel|>Just the answer."}) {
    EXPECT_EQ(parse_in_content(text).content, text);
  }
}

// Each block in its place; the blank line that separates two blocks' texts in
// reasoning_content is not part of either block.
TEST(OutputParserReasoningInContent, SeveralBlocksEachInItsPlace) {
  const auto m = parse_in_content("A<|channel>thought\nX<channel|>B<|channel>thought\nY\n<channel|>C");
  EXPECT_EQ(m.content, "A<|channel>thought\nX<channel|>B<|channel>thought\nY<channel|>C");
  EXPECT_EQ(m.reasoning_content, "X\n\nY");
  const auto adjacent = parse_in_content("<|channel>thought\nX<channel|><|channel>thought\nY<channel|>C");
  EXPECT_EQ(adjacent.content, "<|channel>thought\nX<channel|><|channel>thought\nY<channel|>C");
  EXPECT_EQ(adjacent.reasoning_content, "X\n\nY");
}

// An empty block (Gemma 4 writes one with thinking off) is written as the model wrote it.
TEST(OutputParserReasoningInContent, EmptyBlockIsKept) {
  const auto m = parse_in_content("<|channel>thought<channel|>Hi");
  EXPECT_EQ(m.content, "<|channel>thought\n<channel|>Hi");
  EXPECT_EQ(m.reasoning_content, "");
}

// Whitespace around a block is the answer's, as without the option: the leading whitespace
// of the answer after the first block is dropped, later separation kept.
TEST(OutputParserReasoningInContent, WhitespaceAroundBlocksAsWithoutTheOption) {
  const std::string text = "Hello <|channel>thought\n  X  \n<channel|>\n\nWorld";
  EXPECT_EQ(parse_output(text, opts()).content, "Hello \n\nWorld");
  EXPECT_EQ(parse_in_content(text).content, "Hello <|channel>thought\nX<channel|>\n\nWorld");
  EXPECT_EQ(parse_in_content("<|channel>thought\nX<channel|>\n\n  Answer").content,
            "<|channel>thought\nX<channel|>Answer");
}

// A block that the output's end cuts off (max_tokens) has no closer: the model wrote none.
TEST(OutputParserReasoningInContent, CutBlockHasNoCloser) {
  const auto m = parse_in_content("<|channel>thought\nstill thinking\n");
  EXPECT_EQ(m.content, "<|channel>thought\nstill thinking");
  EXPECT_EQ(m.reasoning_content, "still thinking");
  EXPECT_EQ(parse_in_content("Answer.<|channel>").content, "Answer.<|channel>thought\n");
}

// A call that ends a thought before its closer: the call is a call, the block has no closer.
TEST(OutputParserReasoningInContent, ToolCallsAreStillParsed) {
  const auto m = parse_in_content("<|channel>thought\nLet me look.<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}"
                                  "<tool_call|>");
  EXPECT_EQ(m.content, "<|channel>thought\nLet me look.");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(m.tool_calls[0].arguments_json, R"({"city":"Paris"})");
  const auto closed = parse_in_content("<|channel>thought\nLook it up.<channel|><|tool_call>call:f{a:1}<tool_call|>");
  EXPECT_EQ(closed.content, "<|channel>thought\nLook it up.<channel|>");
  ASSERT_EQ(closed.tool_calls.size(), 1u);
}

// A thought the prompt opened (a reasoning prefill, or starts_in_reasoning): the content
// begins with its text and has its closer, not an opener the output never wrote.
TEST(OutputParserReasoningInContent, PromptOpenedBlockHasNoOpener) {
  ParserOptions o = opts();
  o.continues_reasoning = true;
  const auto m = parse_in_content(" so 42.\n<channel|>\n\nThe answer is 42.", o);
  EXPECT_EQ(m.content, " so 42.<channel|>The answer is 42.");
  EXPECT_EQ(m.reasoning_content, " so 42.");
  ParserOptions s = opts();
  s.starts_in_reasoning = true;
  EXPECT_EQ(parse_in_content("still thinking\n<channel|>\n\nDone.", s).content, "still thinking<channel|>Done.");
}

// A prefill that ends right after "<|channel>" (breaker round 28): the block's text and its
// closer, without an opener (the prompt wrote it) or the label the output writes.
TEST(OutputParserReasoningInContent, PendingLabelIsNotContent) {
  ParserOptions o = opts();
  o.continues_reasoning = true;
  o.reasoning_label_pending = true;
  const auto m = parse_in_content("thought\nLet me see.<channel|>The answer.", o);
  EXPECT_EQ(m.content, "Let me see.<channel|>The answer.");
  EXPECT_EQ(m.reasoning_content, "Let me see.");
}

// Stop strings match the answer only, as without the option: text in a thought never stops it.
TEST(OutputParserReasoningInContent, StopStringsMatchTheAnswerOnly) {
  const auto m = parse_in_content("<|channel>thought\nIt is 42.<channel|>The answer is 42. Bye.", opts(true, true, {"42"}));
  EXPECT_EQ(m.content, "<|channel>thought\nIt is 42.<channel|>The answer is ");
  EXPECT_EQ(m.stop, "42");
  // Nor does the markup the option writes.
  const auto markup = parse_in_content("<|channel>thought\nX<channel|>Y", opts(true, true, {"channel", "thought"}));
  EXPECT_EQ(markup.content, "<|channel>thought\nX<channel|>Y");
  EXPECT_FALSE(markup.stop.has_value());
}

// Bug-case 18: junk before the first thought is part of that thought, in the content too.
TEST(OutputParserReasoningInContent, PreambleJunkBelongsToTheBlock) {
  const auto m = parse_in_content("---\n<|channel>thought\nok<channel|>{\"name\":\"Ann\"}");
  EXPECT_EQ(m.reasoning_content, "---\nok");
  EXPECT_EQ(m.content, "<|channel>thought\n---\nok<channel|>{\"name\":\"Ann\"}");
}

// The model's own turn header and turn close are dropped; a nested opener is no new block.
TEST(OutputParserReasoningInContent, OtherMarkupStaysDropped) {
  EXPECT_EQ(parse_in_content("<|turn>model\n<|channel>thought\nhmm<channel|>Hi there.<turn|>").content,
            "<|channel>thought\nhmm<channel|>Hi there.");
  const auto nested = parse_in_content("<|channel>thought\nA <|channel>thought\nB<channel|>C");
  EXPECT_EQ(nested.content, "<|channel>thought\nA \nB<channel|>C");
  EXPECT_EQ(nested.reasoning_content, "A \nB");
  // A closer without an opener is a boundary, not a block.
  EXPECT_EQ(parse_in_content("A<channel|>B").content, "AB");
}

// Without parse_reasoning the option does nothing: the thought's text is content, unmarked.
TEST(OutputParserReasoningInContent, NeedsParseReasoning) {
  const ParserOptions o = in_content(opts(true, /*reasoning=*/false));
  EXPECT_EQ(parse_output("<|channel>thought\nthinking<channel|>answer", o).content, "thinkinganswer");
}

// The option leaves the counters as they were.
TEST(OutputParserReasoningInContent, StatsUnchanged) {
  const std::string text = "<|channel>thought<channel|><|channel>thought\nX<channel|>Y";
  OutputParser with(in_content());
  with.feed(text);
  with.finish();
  OutputParser without(opts());
  without.feed(text);
  without.finish();
  EXPECT_EQ(with.stats().reasoning_blocks, without.stats().reasoning_blocks);
  EXPECT_EQ(with.stats().empty_reasoning_blocks, without.stats().empty_reasoning_blocks);
  EXPECT_EQ(with.stats().reasoning_blocks, 2);
}

}  // namespace
}  // namespace gs::text
