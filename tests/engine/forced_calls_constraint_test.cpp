// The answer to a forced call holds calls only (decision 0016, "After the forced call"): after
// the first call's closer the mask allows the end tokens alone, or with parallel calls the call
// opener too; a later call must spell an allowed "call:NAME{" and follow its grammar, then the
// same again. On the shakes vocabulary.
#include "engine/forced_calls_constraint.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/shakes.h"
#include "engine/constraint_tokens.h"
#include "engine/call_choice_constraint.h"
#include "engine/json_constraint.h"
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

std::shared_ptr<const text::JsonGrammar> get_grammar() {
  auto g = text::JsonGrammar::from_schema(
      nlohmann::json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],
                               "additionalProperties":false})"),
      "parameters", text::JsonSyntax::kGemmaCall);
  EXPECT_TRUE(g.ok());
  return g.ok() ? *g : nullptr;
}

// The first call's own constraint, as the plan makes it for a forced call of `get`: its
// arguments after the "{" the prompt wrote, up to the closer.
std::unique_ptr<OutputConstraint> first_call() {
  JsonConstraintOptions o;
  o.end_tokens = shakes_tokenizer()->eog_ids();
  o.end_tokens.push_back(token(text::markup::kToolCallClose));
  o.prefix = "{";
  return std::make_unique<JsonConstraint>(shakes_pieces(), get_grammar(), std::move(o));
}

std::shared_ptr<const ForcedCallsOptions> options(bool more_calls) {
  auto o = std::make_shared<ForcedCallsOptions>();
  o->call_open = token(text::markup::kToolCallOpen);
  o->call_close = token(text::markup::kToolCallClose);
  o->end_tokens = shakes_tokenizer()->eog_ids();
  if (more_calls) {
    std::vector<int32_t> ends = o->end_tokens;
    ends.push_back(o->call_close);
    o->next_call = [ends]() -> std::unique_ptr<OutputConstraint> {
      return std::make_unique<CallChoiceConstraint>(shakes_pieces(), std::vector<std::string>{"call:get{"},
                                                    std::vector<CallArguments>{{"call:get{", get_grammar()}}, ends);
    };
  }
  return o;
}

void write(OutputConstraint* c, const std::string& text) {
  for (char ch : text) {
    ASSERT_TRUE(has(mask(*c), byte_token(ch))) << "'" << ch << "' after " << c->describe();
    c->advance(byte_token(ch));
  }
}

std::vector<int32_t> sorted(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

TEST(ForcedCallsConstraint, AfterTheCallOnlyTheEndMayCome) {
  ForcedCallsConstraint c(first_call(), options(/*more_calls=*/false));
  write(&c, "a:7}");
  ASSERT_TRUE(has(mask(c), token(text::markup::kToolCallClose)));
  c.advance(token(text::markup::kToolCallClose));
  EXPECT_TRUE(c.active());
  EXPECT_TRUE(c.constrains_next());
  // Before: the mask was gone here, and anything (prose) could follow the call.
  EXPECT_EQ(mask(c), sorted(shakes_tokenizer()->eog_ids()));
  EXPECT_FALSE(has(mask(c), token(text::markup::kToolCallOpen)));
}

TEST(ForcedCallsConstraint, ParallelCallsMayCallAgainUnderTheSameRules) {
  ForcedCallsConstraint c(first_call(), options(/*more_calls=*/true));
  write(&c, "a:7}");
  c.advance(token(text::markup::kToolCallClose));
  std::vector<int32_t> want = shakes_tokenizer()->eog_ids();
  want.push_back(token(text::markup::kToolCallOpen));
  EXPECT_EQ(mask(c), sorted(want));
  EXPECT_TRUE(c.drafts_allowed());
  std::unique_ptr<OutputConstraint> copy = c.clone();
  ASSERT_NE(copy, nullptr);
  c.advance(token(text::markup::kToolCallOpen));
  // The second call: its name is spelled as allowed ("call:get{": no other letter after "call:")
  // and its arguments follow the grammar (no string for the integer).
  write(&c, "call:");
  EXPECT_FALSE(has(mask(c), byte_token('x')));
  write(&c, "get{a:");
  EXPECT_FALSE(has(mask(c), byte_token('"')));
  write(&c, "-3}");
  c.advance(token(text::markup::kToolCallClose));
  EXPECT_EQ(mask(c), sorted(want));
  // The copy taken between the calls goes its own way: it may end.
  copy->advance(shakes_tokenizer()->eog_ids().front());
  EXPECT_EQ(mask(c), sorted(want));
}

// A call whose arguments have no grammar (only its form was forced) is free up to its closer;
// after it, the same rule.
TEST(ForcedCallsConstraint, ACallWithoutAGrammarIsFreeUpToItsCloser) {
  ForcedCallsConstraint c(nullptr, options(/*more_calls=*/false));
  EXPECT_FALSE(c.constrains_next());
  EXPECT_TRUE(c.drafts_allowed());
  c.advance(byte_token('q'));
  EXPECT_FALSE(c.constrains_next());
  c.advance(token(text::markup::kToolCallClose));
  EXPECT_TRUE(c.constrains_next());
  EXPECT_EQ(mask(c), sorted(shakes_tokenizer()->eog_ids()));
}

}  // namespace
}  // namespace gs
