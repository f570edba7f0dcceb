// A call forced among several functions (tool_choice "required"): the name mask, then the
// chosen function's arguments under its schema's grammar, checked against a brute-force
// reading of every token of the shakes vocabulary. Before, only the name and the first key
// were constrained and {"a":"text"} came back for an integer a.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/shakes.h"
#include "engine/constraint_tokens.h"
#include "engine/call_choice_constraint.h"
#include "text/chat_format.h"
#include "text/json_grammar.h"

namespace gs {
namespace {

using json = nlohmann::json;
using test::shakes_pieces;
using test::shakes_tokenizer;

std::shared_ptr<const text::JsonGrammar> call_grammar(const char* schema) {
  auto g = text::JsonGrammar::from_schema(json::parse(schema), "parameters", text::JsonSyntax::kGemmaCall);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return g.ok() ? *g : nullptr;
}

int32_t closer() {
  auto id = shakes_tokenizer()->find_token(text::markup::kToolCallClose);
  EXPECT_TRUE(id.has_value());
  return id.value_or(-1);
}

using test::byte_token;

struct Fixture {
  std::shared_ptr<const text::JsonGrammar> get = call_grammar(
      R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false})");
  std::shared_ptr<const text::JsonGrammar> weather = call_grammar(
      R"({"type":"object","properties":{"city":{"type":"string","maxLength":5}},"required":["city"],
          "additionalProperties":false})");
  // "get{" and "get_weather{" follow their grammars; "lookup{q:" (a schema the compiler could
  // not hold, first key only) ends the constraint.
  std::vector<std::string> completions = {"get{", "get_weather{", "lookup{q:"};

  CallChoiceConstraint make() const {
    std::vector<int32_t> ends = shakes_tokenizer()->eog_ids();
    ends.push_back(closer());
    return CallChoiceConstraint(shakes_pieces(), completions, {{"get{", get}, {"get_weather{", weather}}, ends);
  }
};

using test::has;
using test::mask;

TEST(CallChoiceConstraint, NameMaskKeepsToAnOpenerAndItsArguments) {
  Fixture f;
  const CallChoiceConstraint c = f.make();
  ASSERT_TRUE(c.active());
  EXPECT_FALSE(c.drafts_allowed());  // no drafts while the name is written
  const std::vector<int32_t> allowed = mask(c);
  ASSERT_FALSE(allowed.empty());
  const auto& pieces = *shakes_pieces();
  for (int32_t id = 0; id < pieces.n_vocab(); ++id) {
    const std::string& p = pieces.piece(id);
    bool ok = false;
    for (const std::string& comp : f.completions) {
      if (p.empty()) break;
      if (p.size() <= comp.size()) {
        ok = ok || comp.compare(0, p.size(), p) == 0;
        continue;
      }
      if (p.compare(0, comp.size(), comp) != 0) continue;
      // Past the opener: the rest must begin its arguments ("lookup{q:" has none to follow).
      const std::shared_ptr<const text::JsonGrammar> g = comp == "get{" ? f.get : comp == "get_weather{" ? f.weather : nullptr;
      text::JsonMatcher m(g);
      ok = ok || g == nullptr || (m.feed(std::string_view("{")) && m.feed(std::string_view(p).substr(comp.size())));
    }
    EXPECT_EQ(ok, has(allowed, id)) << "token " << id << " '" << p << "'";
  }
}

TEST(CallChoiceConstraint, ArgumentsFollowTheChosenFunctionsGrammar) {
  Fixture f;
  CallChoiceConstraint c = f.make();
  for (char ch : std::string("get{")) {
    ASSERT_TRUE(has(mask(c), byte_token(ch))) << ch;
    c.advance(byte_token(ch));
  }
  ASSERT_TRUE(c.active());
  EXPECT_TRUE(c.drafts_allowed());
  // Now every allowed token is one the grammar takes after "{" (the closer not yet).
  text::JsonMatcher m(f.get);
  ASSERT_TRUE(m.feed(std::string_view("{")));
  std::vector<int32_t> allowed = mask(c);
  ASSERT_FALSE(allowed.empty());
  EXPECT_FALSE(has(allowed, closer()));
  EXPECT_FALSE(has(allowed, byte_token('c')));  // get_weather's key, not get's
  const auto& pieces = *shakes_pieces();
  for (int32_t id : allowed) {
    text::JsonMatcher copy = m;
    EXPECT_TRUE(copy.feed(std::string_view(pieces.piece(id)))) << "token " << id << " '" << pieces.piece(id) << "'";
  }
  // Before, a string here was taken for the integer a: no quote may open it.
  for (char ch : std::string("a:")) {
    ASSERT_TRUE(has(mask(c), byte_token(ch))) << ch;
    c.advance(byte_token(ch));
  }
  allowed = mask(c);
  EXPECT_FALSE(has(allowed, byte_token('"')));
  EXPECT_TRUE(has(allowed, byte_token('7')));
  c.advance(byte_token('7'));
  ASSERT_TRUE(has(mask(c), byte_token('}')));
  c.advance(byte_token('}'));
  allowed = mask(c);
  EXPECT_TRUE(has(allowed, closer()));  // a whole value: the call may close
  c.advance(closer());
  EXPECT_FALSE(c.active());
}

TEST(CallChoiceConstraint, CloneFollowsItsOwnTokens) {
  Fixture f;
  CallChoiceConstraint c = f.make();
  for (char ch : std::string("get_weather{")) c.advance(byte_token(ch));
  ASSERT_TRUE(c.drafts_allowed());
  std::unique_ptr<OutputConstraint> copy = c.clone();
  for (char ch : std::string("city:")) copy->advance(byte_token(ch));
  // The original is still before the key; the copy is at the value.
  EXPECT_TRUE(has(mask(c), byte_token('c')));
  EXPECT_FALSE(has(mask(*copy), byte_token('c')));
  EXPECT_NE(c.describe(), copy->describe());
}

TEST(CallChoiceConstraint, AnOpenerWithoutArgumentsEndsIt) {
  Fixture f;
  CallChoiceConstraint c = f.make();
  for (char ch : std::string("lookup{q:")) {
    ASSERT_TRUE(c.active()) << ch;
    c.advance(byte_token(ch));
  }
  EXPECT_FALSE(c.active());
  EXPECT_TRUE(mask(c).empty());
}

}  // namespace
}  // namespace gs
