// Structured output on the token level (decision 0027): the masks equal a brute-force check
// of every token, the thought span and the tool-call escape, and the real engine (the shakes
// model on the CPU, drafter on and off) whose output always follows the schema.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/shakes.h"
#include "engine/constraint_tokens.h"
#include "core/log.h"
#include "engine/engine_factory.h"
#include "engine/json_constraint.h"
#include "gguf/gguf_reader.h"
#include "text/chat_format.h"
#include "text/json_grammar.h"
#include "text/tokenizer.h"

namespace gs {
namespace {

using json = nlohmann::json;

using test::shakes_pieces;
using test::shakes_tokenizer;

std::shared_ptr<const text::JsonGrammar> person_schema() {
  auto g = text::JsonGrammar::from_schema(json::parse(R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":12},"age":{"type":"integer"},"mood":{"enum":["glad","sad"]},
      "tags":{"type":"array","items":{"type":"string","maxLength":8},"maxItems":2}},"required":["name","mood"],
      "additionalProperties":false})"));
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return *g;
}

using test::token;

JsonConstraintOptions chat_options() {
  JsonConstraintOptions o;
  o.think_open = token(std::string(text::markup::kChannelOpen));
  o.think_close = token(std::string(text::markup::kChannelClose));
  o.escape_tokens = {token(std::string(text::markup::kToolCallOpen))};
  o.end_tokens = shakes_tokenizer()->eog_ids();
  return o;
}

// Every id whose piece continues `m` (the mask's JSON part, by brute force), except the
// options' special tokens, which stand for themselves.
std::vector<int32_t> brute_force(const text::JsonMatcher& m, const JsonConstraintOptions& o) {
  const auto& pieces = *shakes_pieces();
  std::vector<int32_t> out;
  for (int32_t id = 0; id < pieces.n_vocab(); ++id) {
    const std::string& p = pieces.piece(id);
    const bool special = id == o.think_open || id == o.think_close || o.escape_tokens[0] == id ||
                         std::find(o.end_tokens.begin(), o.end_tokens.end(), id) != o.end_tokens.end();
    if (p.empty() || special) {
      continue;
    }
    text::JsonMatcher c = m;
    if (c.feed(p)) out.push_back(id);
  }
  return out;
}

// The real 262k-token Gemma 4 vocabulary (shared test assets) and its pieces.
void load_gemma_vocab(std::shared_ptr<const text::Tokenizer>* tok, std::shared_ptr<const TokenPieces>* pieces) {
  auto file = gguf::GgufFile::open(test::shared_path("test-assets/gemma-tokenizer/ggml-vocab-gemma-4-reconstructed.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto t = text::Tokenizer::from_gguf(**file);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  *tok = *t;
  *pieces = std::make_shared<const TokenPieces>(**t);
}

// A mask by brute force over every id of `pieces`: an end token where `m` can end, any other
// id whose piece continues `m`.
std::vector<int32_t> full_mask(const TokenPieces& pieces, const text::JsonMatcher& m, const std::vector<int32_t>& end_tokens) {
  std::vector<int32_t> out;
  for (int32_t id = 0; id < pieces.n_vocab(); ++id) {
    const std::string& p = pieces.piece(id);
    const bool end = std::find(end_tokens.begin(), end_tokens.end(), id) != end_tokens.end();
    text::JsonMatcher x = m;
    if (end ? m.can_end() : !p.empty() && x.feed(p)) out.push_back(id);
  }
  return out;
}

TEST(JsonConstraint, MasksEqualABruteForceCheckOfEveryToken) {
  for (const auto& [grammar, value] :
       std::vector<std::pair<std::shared_ptr<const text::JsonGrammar>, std::string>>{
           {person_schema(), "{\"name\": \"H\xc3\xa9lo \\\"w\\\" \\n x\", \"age\": -42, \"mood\": \"sad\", \"tags\": [\"a b\"]}"},
           {text::JsonGrammar::any_object(), "{\"a\": [1.5e3, true, null, {\"b\": \"\\u00e9\"}]}"},
           // Integer bounds: each digit only where some value it begins lies in range.
           {*text::JsonGrammar::from_schema(json::parse(R"({"type":"object","properties":{
                "n":{"type":"integer","minimum":-40,"maximum":1234},
                "m":{"type":"integer","exclusiveMinimum":999,"maximum":1234}}})")),
            "{\"n\": -37, \"m\": 1234}"},
           {*text::JsonGrammar::from_schema(json::parse(R"({"type":"integer","minimum":100,"maximum":1234})")),
            "1234"},
           // A pattern, a format and property counts (no free-string fast path in them).
           {*text::JsonGrammar::from_schema(json::parse(R"({"type":"object","properties":{
                "code":{"type":"string","pattern":"^[A-Z][a-z]+ \\d{2}$"},
                "day":{"type":"string","format":"date"}},"minProperties":2,"maxProperties":2})")),
            "{\"code\": \"Romeo 12\", \"day\": \"2024-02-29\"}"}}) {
    const JsonConstraintOptions options = chat_options();
    JsonConstraint c(shakes_pieces(), grammar, options);
    text::JsonMatcher m(grammar);
    const std::vector<int32_t> ids = shakes_tokenizer()->encode(value, /*add_special=*/false, /*parse_special=*/false);
    ASSERT_FALSE(ids.empty());
    for (size_t i = 0; i <= ids.size(); ++i) {
      std::vector<int32_t> expected = brute_force(m, options);
      if (i == 0) expected.insert(expected.end(), {options.think_open, options.escape_tokens[0]});
      if (m.can_end()) expected.insert(expected.end(), options.end_tokens.begin(), options.end_tokens.end());
      std::sort(expected.begin(), expected.end());
      std::vector<int32_t> allowed;
      c.allowed(&allowed);
      ASSERT_EQ(allowed, expected) << "after " << i << " tokens of " << value;
      if (i == ids.size()) break;
      ASSERT_TRUE(std::binary_search(allowed.begin(), allowed.end(), ids[i])) << i;
      c.advance(ids[i]);
      ASSERT_TRUE(m.feed(shakes_pieces()->piece(ids[i])));
    }
    // A whole value: only the end may come, and it ends the constraint.
    std::vector<int32_t> allowed;
    c.allowed(&allowed);
    EXPECT_EQ(allowed, options.end_tokens);
    EXPECT_EQ(c.describe(), value.substr(value.size() > 256 ? value.size() - 256 : 0));
    c.advance(options.end_tokens[0]);
    EXPECT_FALSE(c.active());
  }
}

TEST(JsonConstraint, ToolCallMasksEqualABruteForceCheck) {
  // A forced call's arguments in the Gemma call form, from the prompt's "{" (decision 0027 §7).
  const int32_t close = token(std::string(text::markup::kToolCallClose));
  for (const char* schema : {R"({"type":"object"})",
                             R"({"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"},
                                 "unit":{"enum":["C","F"]}},"required":["city"]})"}) {
    auto g = text::JsonGrammar::from_schema(json::parse(schema), "schema", text::JsonSyntax::kGemmaCall);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    JsonConstraintOptions o;
    o.end_tokens = {close};
    o.prefix = "{";
    JsonConstraint c(shakes_pieces(), *g, o);
    text::JsonMatcher m(*g);
    ASSERT_TRUE(m.feed(std::string_view("{")));
    const std::string args = "city:<|\"|>Verona, \"fair\" <3<|\"|>,n:12,unit:<|\"|>C<|\"|>}";
    const std::vector<int32_t> ids = shakes_tokenizer()->encode(args, false, true);
    for (size_t i = 0; i <= ids.size(); ++i) {
      std::vector<int32_t> expected;
      for (int32_t id = 0; id < shakes_pieces()->n_vocab(); ++id) {
        const std::string& p = shakes_pieces()->piece(id);
        text::JsonMatcher x = m;
        if (id == close ? m.can_end() : !p.empty() && x.feed(p)) expected.push_back(id);
      }
      std::vector<int32_t> allowed;
      c.allowed(&allowed);
      ASSERT_EQ(allowed, expected) << schema << " after " << i << " tokens";
      if (i == ids.size()) break;
      ASSERT_TRUE(std::binary_search(allowed.begin(), allowed.end(), ids[i])) << i;
      c.advance(ids[i]);
      ASSERT_TRUE(m.feed(shakes_pieces()->piece(ids[i])));
    }
    c.advance(close);
    EXPECT_FALSE(c.active());
  }
}

TEST(JsonConstraint, MasksOnTheFullGemmaVocabulary) {
  // The real 262k-token vocabulary has many more multi-byte and byte-fallback pieces.
  std::shared_ptr<const text::Tokenizer> tok;
  std::shared_ptr<const TokenPieces> pieces;
  ASSERT_NO_FATAL_FAILURE(load_gemma_vocab(&tok, &pieces));
  auto grammar = person_schema();
  JsonConstraintOptions o;
  o.end_tokens = tok->eog_ids();
  JsonConstraint c(pieces, grammar, o);
  text::JsonMatcher m(grammar);
  const std::string value = "{\"name\": \"Caf\xc3\xa9 \xe6\x97\xa5\", \"mood\": \"glad\", \"age\": 7}";
  const std::vector<int32_t> ids = tok->encode(value, false, false);
  double mask_ms = 0;
  int64_t masked = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    std::vector<int32_t> allowed;
    const auto t0 = std::chrono::steady_clock::now();
    c.allowed(&allowed);
    mask_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    masked += static_cast<int64_t>(allowed.size());
    if (i % 3 == 0 || i == ids.size()) {
      ASSERT_EQ(allowed, full_mask(*pieces, m, o.end_tokens)) << "after " << i << " tokens";
    }
    if (i == ids.size()) break;
    ASSERT_TRUE(std::binary_search(allowed.begin(), allowed.end(), ids[i])) << i;
    c.advance(ids[i]);
    ASSERT_TRUE(m.feed(pieces->piece(ids[i])));
  }
  EXPECT_GT(masked, 0);
  std::printf("[ info ] %zu masks over %d tokens: %.2f ms a mask\n", ids.size() + 1, pieces->n_vocab(),
              mask_ms / static_cast<double>(ids.size() + 1));
}

// Inside a string with a pattern no piece is free: every candidate is tested. The cost of a
// mask there on the real vocabulary (printed), and each mask against brute force.
TEST(JsonConstraint, MasksInAPatternedStringOnTheFullGemmaVocabulary) {
  std::shared_ptr<const text::Tokenizer> tok;
  std::shared_ptr<const TokenPieces> pieces;
  ASSERT_NO_FATAL_FAILURE(load_gemma_vocab(&tok, &pieces));
  auto grammar = *text::JsonGrammar::from_schema(json::parse(R"({"type":"object","properties":{
      "who":{"type":"string","pattern":"^[A-Z][a-z]+( [A-Z][a-z]+)*$"},"day":{"type":"string","format":"date"}},
      "required":["who","day"],"additionalProperties":false})"));
  JsonConstraintOptions o;
  o.end_tokens = tok->eog_ids();
  JsonConstraint c(pieces, grammar, o);
  text::JsonMatcher m(grammar);
  const std::string value = "{\"who\": \"Friar Laurence\", \"day\": \"1597-07-31\"}";
  const std::vector<int32_t> ids = tok->encode(value, false, false);
  double mask_ms = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    std::vector<int32_t> allowed;
    const auto t0 = std::chrono::steady_clock::now();
    c.allowed(&allowed);
    mask_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(allowed, full_mask(*pieces, m, o.end_tokens)) << "after " << i << " tokens";
    if (i == ids.size()) break;
    ASSERT_TRUE(std::binary_search(allowed.begin(), allowed.end(), ids[i])) << i;
    c.advance(ids[i]);
    ASSERT_TRUE(m.feed(pieces->piece(ids[i])));
  }
  std::printf("[ info ] %zu masks (patterned strings) over %d tokens: %.2f ms a mask\n", ids.size() + 1,
              pieces->n_vocab(), mask_ms / static_cast<double>(ids.size() + 1));
}

TEST(JsonConstraint, AThoughtMayComeFirstAndAToolCallEndsIt) {
  const JsonConstraintOptions o = chat_options();
  JsonConstraint c(shakes_pieces(), person_schema(), o);
  c.advance(o.think_open);
  EXPECT_TRUE(c.active());
  EXPECT_FALSE(c.constrains_next());  // the thought is free
  std::vector<int32_t> allowed;
  c.allowed(&allowed);
  EXPECT_TRUE(allowed.empty());
  for (int32_t id : shakes_tokenizer()->encode("I think { ] \"", false, false)) c.advance(id);
  c.advance(o.think_close);
  EXPECT_TRUE(c.constrains_next());
  c.allowed(&allowed);
  EXPECT_FALSE(std::binary_search(allowed.begin(), allowed.end(), o.think_open));  // one thought only
  const auto first_id = [](const char* t) { return shakes_tokenizer()->encode(t, false, false).at(0); };
  EXPECT_TRUE(std::binary_search(allowed.begin(), allowed.end(), first_id("{")));
  EXPECT_FALSE(std::binary_search(allowed.begin(), allowed.end(), first_id("[")));
  // No junk before the value (bug-case 18): text is not allowed, nor a second opener.
  for (int32_t id : shakes_tokenizer()->encode("---", false, false)) {
    EXPECT_FALSE(std::binary_search(allowed.begin(), allowed.end(), id));
  }

  JsonConstraint tool(shakes_pieces(), person_schema(), o);
  tool.advance(o.escape_tokens[0]);
  EXPECT_FALSE(tool.active());
}

// A prompt that ends inside a thought (a continued reasoning prefill): the output starts in
// the free span and the value follows its closer, with no second thought.
TEST(JsonConstraint, AThoughtTheFirstTokensContinue) {
  JsonConstraintOptions o = chat_options();
  o.starts_in_thought = true;
  JsonConstraint c(shakes_pieces(), person_schema(), o);
  EXPECT_TRUE(c.active());
  EXPECT_FALSE(c.constrains_next());
  for (int32_t id : shakes_tokenizer()->encode(" and so { ]", false, false)) c.advance(id);
  EXPECT_FALSE(c.constrains_next());
  c.advance(o.think_close);
  EXPECT_TRUE(c.constrains_next());
  std::vector<int32_t> allowed;
  c.allowed(&allowed);
  EXPECT_FALSE(std::binary_search(allowed.begin(), allowed.end(), o.think_open));
  EXPECT_TRUE(std::binary_search(allowed.begin(), allowed.end(), shakes_tokenizer()->encode("{", false, false).at(0)));
}

// The real engine: a chat prompt, a schema, sampling at temperature 1.
class JsonEngine : public ::testing::TestWithParam<bool> {
 protected:
  static std::vector<int32_t> prompt(bool thinking) {
    std::vector<text::ChatMessage> messages(1);
    messages[0].content = "Describe a person of the play as JSON.";
    text::ChatRenderOptions options;
    options.enable_thinking = thinking;
    options.add_generation_prompt = true;
    auto rendered = text::render_chat_prompt(messages, {}, options);
    EXPECT_TRUE(rendered.ok()) << rendered.status().to_string();
    return shakes_tokenizer()->encode_prompt(rendered->text, rendered->markup, true);
  }

  // The text of the ids after the thought span (if any; empty when it never closed), without
  // the end token.
  static std::string content(const std::vector<int32_t>& ids, int32_t close) {
    auto it = std::find(ids.begin(), ids.end(), close);
    const bool thought = !ids.empty() && ids[0] == token(std::string(text::markup::kChannelOpen));
    if (thought && it == ids.end()) return "";
    std::vector<int32_t> rest(it == ids.end() ? ids.begin() : it + 1, ids.end());
    text::DecodeOptions o;
    auto text = shakes_tokenizer()->decode(rest, o);
    EXPECT_TRUE(text.ok());
    return text.ok() ? *text : "";
  }
};

TEST_P(JsonEngine, OutputAlwaysFollowsTheSchema) {
  const bool drafter = GetParam();
  set_log_level("warn");
  // Adaptive drafting, as served: it backs off where the drafts do not fit.
  const EngineOptions o = test::shakes_engine_options(drafter, /*adaptive=*/true);
  auto loaded = create_engine(o);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  Engine& engine = *loaded->engine;
  const JsonConstraintOptions tokens = chat_options();

  int whole = 0;
  int64_t drafted = 0;
  int64_t accepted = 0;
  std::string greedy;
  for (uint64_t seed = 0; seed <= 8; ++seed) {
    GenerationRequest req;
    req.prompt = prompt(seed % 2 == 1);
    req.max_tokens = 160;
    req.speculative = drafter;
    req.json.grammar = person_schema();
    req.json.think_open = tokens.think_open;
    req.json.think_close = tokens.think_close;
    if (seed == 0) {
      req.sampling.temperature = 0.0f;
    } else {
      req.sampling.temperature = 1.0f;
      req.sampling.top_p = seed % 3 == 0 ? 0.9f : 1.0f;
      req.sampling.has_seed = true;
      req.sampling.seed = seed;
    }
    const test::EngineOutput out = test::run_request(engine, req);
    drafted += out.usage.drafted_tokens;
    accepted += out.usage.accepted_tokens;
    const std::string text = content(out.ids, tokens.think_close);
    if (seed == 0) greedy = text;
    text::JsonMatcher m(person_schema());
    EXPECT_TRUE(m.feed(text)) << "seed " << seed << ": " << json(text).dump();
    if (out.finish == FinishReason::kStop) {
      ++whole;
      ASSERT_TRUE(json::accept(text)) << "seed " << seed << ": " << json(text).dump();
      const json v = json::parse(text);
      EXPECT_TRUE(v.contains("name") && v["name"].is_string()) << text;
      EXPECT_TRUE(v.contains("mood") && (v["mood"] == "glad" || v["mood"] == "sad")) << text;
      if (v.contains("age")) {
        EXPECT_TRUE(v["age"].is_number_integer()) << text;
      }
      if (v.contains("tags")) {
        EXPECT_LE(v["tags"].size(), 2u) << text;
      }
    } else {
      EXPECT_EQ(out.finish, FinishReason::kLength) << "seed " << seed;
    }
  }
  EXPECT_GT(whole, 0) << "no seed finished its value";
  // Drafting goes on under the constraint (each verify position masked after its drafts).
  if (drafter) {
    EXPECT_GT(drafted, 0);
    std::printf("[ info ] drafted %lld, accepted %lld under the JSON constraint\n", static_cast<long long>(drafted),
                static_cast<long long>(accepted));
  }

  // Greedy is the same with and without the drafter (the constrained steps draft nothing).
  GenerationRequest req;
  req.prompt = prompt(false);
  req.max_tokens = 160;
  req.speculative = !drafter;
  req.json.grammar = person_schema();
  req.sampling.temperature = 0.0f;
  EXPECT_EQ(content(test::run_request(engine, req).ids, tokens.think_close), greedy);
  loaded->engine->shutdown();
}

INSTANTIATE_TEST_SUITE_P(Drafter, JsonEngine, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "DrafterOn" : "DrafterOff"; });

}  // namespace
}  // namespace gs
