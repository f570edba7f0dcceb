// Output schemas through the server's grammar cache (decision 0072): every spelling of a JSON
// Schema for the whole output (response_format json_schema and json_object, json_schema,
// guided_json, structured_outputs.json, the Messages route's output_config.format and
// output_format, the Responses route's text.format) compiles through the cache the parsers are
// given; a resent schema is the first compile's grammar object, and every grammar and error is
// what a parse without the cache gives, the field the schema came from included.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "server/anthropic_request.h"
#include "server/api_request.h"
#include "server/output_schema.h"
#include "server/responses_request.h"
#include "text/json_grammar.h"
#include "text/json_grammar_cache.h"
#include "text/regex_dfa.h"

namespace gs::server {
namespace {

using json = nlohmann::json;
using Grammar = std::shared_ptr<const text::JsonGrammar>;

constexpr int64_t kLarge = int64_t{1} << 40;

json patterned_schema() {
  return json::parse(R"({"type":"object","properties":{
      "code":{"type":"string","pattern":"^[A-Z]{3}$"},"day":{"type":"string","format":"date"},
      "ref":{"type":"string","pattern":"^(a|b)*a(a|b){6}$"},"n":{"type":"integer","minimum":1,"maximum":9}},
      "required":["code","day"],"additionalProperties":false})");
}

// What a grammar holds, enough to tell compiles apart: each node's kinds, keys, required ones
// and the sizes of its automata.
std::string describe(const Grammar& g) {
  if (!g) return "none";
  std::string out;
  for (int32_t i = 0; i < g->size(); ++i) {
    const text::JsonGrammar::Node& n = g->node(i);
    out += std::to_string(n.kinds) + "{";
    for (size_t k = 0; k < n.keys.size(); ++k) out += n.keys[k] + ":" + std::to_string(n.key_nodes[k]) + ",";
    out += "}" + n.required.to_string().substr(text::kJsonMaxKeys - 8);
    out += " p" + std::to_string(n.pattern ? n.pattern->size() : -1);
    out += " f" + std::to_string(n.pattern_form ? n.pattern_form->size() : -1) + ";";
  }
  return out;
}

enum class Route { kChat, kCompletions, kMessages, kCountTokens, kResponses };

struct Parsed {
  Grammar grammar;
  std::string error;  // "" when the request parsed
};

Parsed parse(Route route, const json& body, text::JsonGrammarCache* cache) {
  const RequestDefaults defaults;
  const auto done = [](const auto& r, const auto& grammar_of) {
    if (!r.ok()) return Parsed{nullptr, r.status().to_string()};
    return Parsed{grammar_of(*r), ""};
  };
  switch (route) {
    case Route::kChat:
      return done(parse_chat_request(body, defaults, cache), [](const auto& r) { return r.gen.json_grammar; });
    case Route::kCompletions:
      return done(parse_completion_request(body, defaults, cache), [](const auto& r) { return r.gen.json_grammar; });
    case Route::kMessages:
      return done(parse_messages_request(body, defaults, MessagesRoute::kCreate, cache),
                  [](const auto& r) { return r.gen.json_grammar; });
    case Route::kCountTokens:
      return done(parse_messages_request(body, defaults, MessagesRoute::kCountTokens, cache),
                  [](const auto& r) { return r.gen.json_grammar; });
    case Route::kResponses:
      return done(parse_responses_request(body, defaults, cache),
                  [](const auto& r) { return r.chat.gen.json_grammar; });
  }
  return {};
}

json chat_body(json fields) {
  json b = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  b.update(fields);
  return b;
}

struct Case {
  const char* what;
  Route route;
  json body;
};

// One request of each spelling, all with the same schema.
std::vector<Case> spellings(const json& schema) {
  const json user = json::array({{{"role", "user"}, {"content", "hi"}}});
  return {
      {"response_format json_schema", Route::kChat,
       chat_body({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}}}})},
      {"response_format json_object with a schema", Route::kChat,
       chat_body({{"response_format", {{"type", "json_object"}, {"schema", schema}}}})},
      {"json_schema", Route::kChat, chat_body({{"json_schema", schema}})},
      {"guided_json", Route::kChat, chat_body({{"guided_json", schema}})},
      {"guided_json as a string", Route::kChat, chat_body({{"guided_json", schema.dump()}})},
      {"structured_outputs.json", Route::kChat, chat_body({{"structured_outputs", {{"json", schema}}}})},
      {"structured_outputs.json as a string", Route::kChat,
       chat_body({{"structured_outputs", {{"json", schema.dump()}}}})},
      {"completions response_format", Route::kCompletions,
       {{"prompt", "hi"}, {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", schema}}}}}}},
      {"completions guided_json", Route::kCompletions, {{"prompt", "hi"}, {"guided_json", schema}}},
      {"messages output_config.format", Route::kMessages,
       {{"messages", user}, {"max_tokens", 8}, {"output_config", {{"format", {{"type", "json_schema"}, {"schema", schema}}}}}}},
      {"messages output_format", Route::kMessages,
       {{"messages", user}, {"max_tokens", 8}, {"output_format", {{"type", "json_schema"}, {"schema", schema}}}}},
      {"count_tokens output_config.format", Route::kCountTokens,
       {{"messages", user}, {"output_config", {{"format", {{"type", "json_schema"}, {"schema", schema}}}}}}},
      {"responses text.format", Route::kResponses,
       {{"input", "hi"}, {"text", {{"format", {{"type", "json_schema"}, {"name", "x"}, {"schema", schema}}}}}}},
  };
}

// The field path the compile names in its errors, per spelling: the cache keys hold it, so
// each spelling has its entry (the Responses route's text.format is read as response_format
// json_schema, its errors renamed after).
constexpr int kDistinctPaths = 7;  // response_format.json_schema.schema, response_format.schema,
                                   // json_schema, guided_json, structured_outputs.json,
                                   // output_config.format.schema, output_format.schema

TEST(OutputSchemaCache, EverySpellingGetsTheGrammarOfAParseWithoutTheCache) {
  const std::vector<Case> cases = spellings(patterned_schema());
  text::JsonGrammarCache cache(64, kLarge);
  std::vector<Grammar> first(cases.size());
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const Parsed cold = parse(cases[i].route, cases[i].body, nullptr);
      ASSERT_EQ(cold.error, "") << cases[i].what;
      ASSERT_NE(cold.grammar, nullptr) << cases[i].what;
      const Parsed warm = parse(cases[i].route, cases[i].body, &cache);
      ASSERT_EQ(warm.error, "") << cases[i].what;
      EXPECT_EQ(describe(warm.grammar), describe(cold.grammar)) << cases[i].what;
      EXPECT_NE(warm.grammar, cold.grammar) << cases[i].what;  // the cache's object, not a fresh one
      if (round == 0) {
        first[i] = warm.grammar;
      } else {
        EXPECT_EQ(warm.grammar, first[i]) << cases[i].what << ": a resent schema is the kept object";
      }
    }
  }
  const text::JsonGrammarCacheStats s = cache.stats();
  EXPECT_EQ(s.misses, static_cast<uint64_t>(kDistinctPaths));
  EXPECT_EQ(s.hits, 2 * cases.size() - kDistinctPaths);
  EXPECT_EQ(s.entries, kDistinctPaths);
}

// The compile reads the schema, the field path and the syntax only: what else the request
// says about its format (name, strict, description, vLLM's whitespace options) does not change
// the grammar, so one entry serves them all.
TEST(OutputSchemaCache, FieldsTheCompileDoesNotReadShareTheEntry) {
  const json schema = patterned_schema();
  text::JsonGrammarCache cache(64, kLarge);
  Grammar kept;
  for (const json& js : {json{{"name", "a"}, {"schema", schema}}, json{{"name", "b"}, {"schema", schema}, {"strict", true}},
                         json{{"name", "c"}, {"schema", schema}, {"strict", false}, {"description", "d"}}}) {
    const Parsed p = parse(Route::kChat, chat_body({{"response_format", {{"type", "json_schema"}, {"json_schema", js}}}}),
                           &cache);
    ASSERT_EQ(p.error, "");
    if (!kept) kept = p.grammar;
    EXPECT_EQ(p.grammar, kept);
  }
  for (const json& so : {json{{"json", schema}}, json{{"json", schema}, {"disable_any_whitespace", true}},
                         json{{"json", schema}, {"whitespace_pattern", "[ ]?"}}}) {
    const Parsed p = parse(Route::kChat, chat_body({{"structured_outputs", so}}), &cache);
    ASSERT_EQ(p.error, "") << so.dump();
  }
  EXPECT_EQ(cache.stats().misses, 2u);
  EXPECT_EQ(cache.stats().hits, 4u);
  // The schema is: one value more is another entry.
  json other = schema;
  other["properties"]["n"]["maximum"] = 8;
  ASSERT_EQ(parse(Route::kChat, chat_body({{"json_schema", other}}), &cache).error, "");
  ASSERT_EQ(parse(Route::kChat, chat_body({{"json_schema", schema}}), &cache).error, "");
  EXPECT_EQ(cache.stats().misses, 4u);
}

// A schema the compiler refuses within its budget is kept as its error: the second request of
// each spelling gets, from the entry, the error a parse without the cache gives, naming its own
// field (the key holds the path: one entry per spelling, never another field's message).
TEST(OutputSchemaCache, ARefusedSchemaGivesTheSameErrorEveryTime) {
  const json bad = {{"type", "object"},
                    {"properties", {{"k", {{"type", "array"}, {"prefixItems", json::array({{{"type", "string"}}})}}}}}};
  const std::vector<Case> cases = spellings(bad);
  text::JsonGrammarCache cache(64, kLarge);
  for (int round = 0; round < 3; ++round) {
    for (const Case& c : cases) {
      const Parsed cold = parse(c.route, c.body, nullptr);
      ASSERT_NE(cold.error, "") << c.what;
      const Parsed warm = parse(c.route, c.body, &cache);
      EXPECT_EQ(warm.error, cold.error) << c.what << ", round " << round;
      EXPECT_EQ(warm.grammar, nullptr);
    }
  }
  // Each names the field it came from.
  EXPECT_NE(parse(cases[0].route, cases[0].body, &cache).error.find("response_format.json_schema.schema.properties.k"),
            std::string::npos);
  EXPECT_NE(parse(cases[3].route, cases[3].body, &cache).error.find("guided_json.properties.k"), std::string::npos);
  EXPECT_NE(parse(cases[9].route, cases[9].body, &cache).error.find("output_config.format.schema.properties.k"),
            std::string::npos);
  EXPECT_NE(parse(cases[12].route, cases[12].body, &cache).error.find("text.format.schema.properties.k"),
            std::string::npos);
  const text::JsonGrammarCacheStats s = cache.stats();
  EXPECT_EQ(s.misses, static_cast<uint64_t>(kDistinctPaths));
  EXPECT_EQ(s.entries, kDistinctPaths);
}

// The budget: an output schema has a pattern budget of its own (a null budget, as before the
// cache). A schema whose patterns run past it is refused, and that compile is never kept (a
// richer budget could hold it): every request compiles it again and gets the same error. One
// that spends most of the budget is kept, and a fresh request's budget always covers it.
TEST(OutputSchemaCache, APastBudgetSchemaIsNeverKeptAndAnExpensiveOneIsAHit) {
  const json past = {{"type", "object"},
                     {"properties", {{"a", {{"type", "string"}, {"pattern", "((a|aa)*){1000}x{3000}"}}}}}};
  {
    text::RegexBudget b;
    auto cold = text::JsonGrammar::from_schema(past, "guided_json", text::JsonSyntax::kJson, &b);
    ASSERT_FALSE(cold.ok());
    ASSERT_TRUE(b.work < 0 || b.bytes < 0) << "the schema must run past the budget: " << cold.status().to_string();
  }
  text::JsonGrammarCache cache(64, kLarge);
  std::string error;
  for (int i = 0; i < 3; ++i) {
    const Parsed p = parse(Route::kChat, chat_body({{"guided_json", past}}), &cache);
    ASSERT_NE(p.error, "");
    if (i == 0) error = p.error;
    EXPECT_EQ(p.error, error);
    EXPECT_EQ(p.error, parse(Route::kChat, chat_body({{"guided_json", past}}), nullptr).error);
  }
  EXPECT_EQ(cache.stats().entries, 0);
  EXPECT_EQ(cache.stats().misses, 3u);
  EXPECT_EQ(cache.stats().hits, 0u);

  // Patterns that together spend more than half of one budget: a second compile from what the
  // first left could not hold them, a fresh request's budget does.
  json expensive = {{"type", "object"}, {"properties", json::object()}};
  const char* const kCostly[] = {"(.*a){40}(.*b){40}(.*c){40}", "(.*d){40}(.*e){40}(.*f){40}",
                                 "(.*g){40}(.*h){40}(.*i){40}"};
  for (const char* p : kCostly) expensive["properties"][p] = {{"type", "string"}, {"pattern", p}};
  text::RegexBudget spent;
  ASSERT_TRUE(text::JsonGrammar::from_schema(expensive, "json_schema", text::JsonSyntax::kJson, &spent).ok());
  ASSERT_TRUE(spent.work < text::RegexBudget{}.work / 2 || spent.bytes < text::RegexBudget{}.bytes / 2)
      << "the schema should spend most of a budget";
  Grammar kept;
  for (int i = 0; i < 3; ++i) {
    const Parsed p = parse(Route::kChat, chat_body({{"json_schema", expensive}}), &cache);
    ASSERT_EQ(p.error, "");
    if (!kept) kept = p.grammar;
    EXPECT_EQ(p.grammar, kept);
  }
  EXPECT_EQ(cache.stats().entries, 1);
  EXPECT_EQ(cache.stats().hits, 2u);
  // compile_output_schema itself: the same object.
  auto direct = compile_output_schema(expensive, "json_schema", &cache);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(direct->get(), kept.get());
}

}  // namespace
}  // namespace gs::server
