// tool_choice auto's lazy call grammar (decision 0065): no mask before the call opener (the
// text, a thought included, is the model's and drafts run), and from the opener on the call
// must spell a declared "call:NAME{", its arguments follow the grammar, and only an end (or,
// with parallel calls, another call) follows its closer. On the shakes vocabulary.
#include "engine/lazy_calls_constraint.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/shakes.h"
#include "engine/constraint_tokens.h"
#include "engine/call_choice_constraint.h"
#include "text/chat_format.h"
#include "text/json_grammar.h"

namespace gs {
namespace {

using test::shakes_pieces;
using test::shakes_tokenizer;

using test::byte_token;
using test::has;
using test::mask;
using test::token;

std::vector<int32_t> sorted(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::shared_ptr<const text::JsonGrammar> get_grammar() {
  auto g = text::JsonGrammar::from_schema(
      nlohmann::json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],
                               "additionalProperties":false})"),
      "parameters", text::JsonSyntax::kGemmaCall);
  EXPECT_TRUE(g.ok());
  return g.ok() ? *g : nullptr;
}

// What the runner builds for the declared functions `get` (its schema held by the grammar) and
// `other` (free after its "{"), and what may follow a closer.
std::unique_ptr<LazyCallsConstraint> make(bool more_calls) {
  std::vector<int32_t> ends = shakes_tokenizer()->eog_ids();
  ends.push_back(token(text::markup::kToolCallClose));
  auto call_text = [ends]() -> std::unique_ptr<OutputConstraint> {
    return std::make_unique<CallChoiceConstraint>(shakes_pieces(), std::vector<std::string>{"call:get{", "call:other{"},
                                                  std::vector<CallArguments>{{"call:get{", get_grammar()}}, ends);
  };
  auto o = std::make_shared<ForcedCallsOptions>();
  o->call_open = token(text::markup::kToolCallOpen);
  o->call_close = token(text::markup::kToolCallClose);
  o->end_tokens = shakes_tokenizer()->eog_ids();
  if (more_calls) o->next_call = call_text;
  return std::make_unique<LazyCallsConstraint>(o->call_open, call_text, o);
}

void write(OutputConstraint* c, const std::string& text) {
  for (char ch : text) {
    ASSERT_TRUE(has(mask(*c), byte_token(ch))) << "'" << ch << "' after " << c->describe();
    c->advance(byte_token(ch));
  }
}

// Free text: no mask, drafts allowed (the runner then samples and drafts as without a
// constraint), whatever the text holds, a thought's markup and the closer's token included.
TEST(LazyCallsConstraint, TheTextBeforeTheOpenerIsFree) {
  auto c = make(/*more_calls=*/true);
  for (const std::string_view t : {text::markup::kChannelOpen, text::markup::kChannelClose, text::markup::kToolCallClose}) {
    EXPECT_TRUE(c->active());
    EXPECT_FALSE(c->constrains_next());
    EXPECT_TRUE(c->drafts_allowed());
    EXPECT_TRUE(mask(*c).empty());
    c->advance(token(t));
  }
  for (char ch : std::string("call:junk{x:1}")) c->advance(byte_token(ch));  // spelled, not opened
  EXPECT_FALSE(c->constrains_next());
  EXPECT_TRUE(mask(*c).empty());
  EXPECT_NE(c->clone(), nullptr);
  // The runner ends a round at the opener (and masks nothing before it).
  EXPECT_EQ(c->wake_tokens(), std::vector<int32_t>{token(text::markup::kToolCallOpen)});
  c->advance(token(text::markup::kToolCallOpen));
  EXPECT_TRUE(c->wake_tokens().empty());
}

// The opener hands the answer to the calls: a declared name, the arguments under the schema,
// then only an end. Before, everything after the opener was the model's.
TEST(LazyCallsConstraint, AfterTheOpenerTheCallIsDeclaredAndFollowsItsSchema) {
  auto c = make(/*more_calls=*/false);
  for (char ch : std::string("Let me see. ")) c->advance(byte_token(ch));
  c->advance(token(text::markup::kToolCallOpen));
  EXPECT_TRUE(c->constrains_next());
  write(c.get(), "call:");
  EXPECT_FALSE(has(mask(*c), byte_token('x')));  // no undeclared name
  write(c.get(), "get{a:");
  EXPECT_FALSE(has(mask(*c), byte_token('"')));  // an integer, not a string
  write(c.get(), "12}");
  ASSERT_TRUE(has(mask(*c), token(text::markup::kToolCallClose)));
  c->advance(token(text::markup::kToolCallClose));
  EXPECT_TRUE(c->constrains_next());
  EXPECT_EQ(mask(*c), sorted(shakes_tokenizer()->eog_ids()));  // no prose, no second call
}

// With parallel calls another call may follow, under the same rules; the copy taken before the
// opener stays free.
TEST(LazyCallsConstraint, ParallelCallsFollowTheSameRules) {
  auto c = make(/*more_calls=*/true);
  std::unique_ptr<OutputConstraint> before = c->clone();
  ASSERT_NE(before, nullptr);
  c->advance(token(text::markup::kToolCallOpen));
  write(c.get(), "call:get{a:1}");
  c->advance(token(text::markup::kToolCallClose));
  std::vector<int32_t> want = shakes_tokenizer()->eog_ids();
  want.push_back(token(text::markup::kToolCallOpen));
  EXPECT_EQ(mask(*c), sorted(want));
  EXPECT_TRUE(c->drafts_allowed());
  std::unique_ptr<OutputConstraint> between = c->clone();
  ASSERT_NE(between, nullptr);
  EXPECT_EQ(mask(*between), sorted(want));
  c->advance(token(text::markup::kToolCallOpen));
  write(c.get(), "call:o");
  EXPECT_FALSE(has(mask(*c), byte_token('x')));
  write(c.get(), "ther{");
  EXPECT_FALSE(c->constrains_next());  // a function whose arguments have no grammar: free to its closer
  c->advance(token(text::markup::kToolCallClose));
  EXPECT_EQ(mask(*c), sorted(want));
  EXPECT_FALSE(before->constrains_next());
  EXPECT_TRUE(mask(*before).empty());
}

// An opener inside a thought that was never closed: the output parser reads it as the end of
// the thought and a call, so the call's text is held like any other.
TEST(LazyCallsConstraint, AnOpenerInsideAnUnclosedThoughtIsACall) {
  auto c = make(/*more_calls=*/false);
  c->advance(token(text::markup::kChannelOpen));
  for (char ch : std::string("thought\nI will call it.")) c->advance(byte_token(ch));
  EXPECT_FALSE(c->constrains_next());
  c->advance(token(text::markup::kToolCallOpen));
  EXPECT_TRUE(c->constrains_next());
  write(c.get(), "call:g");
  EXPECT_FALSE(has(mask(*c), byte_token('o')));
}

}  // namespace
}  // namespace gs
