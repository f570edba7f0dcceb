// The compiled-grammar cache (decision 0066): a hit is the same grammar object, charged to the
// caller's pattern budget as the cold compile was; a budget that cannot cover that spend gets
// the cold compile's answer; compiles past their budget are not kept; keys tell values apart;
// eviction by count and by bytes, least recently used first; many threads at once.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "text/json_grammar.h"
#include "text/json_grammar_cache.h"
#include "text/regex_dfa.h"

namespace gs::text {
namespace {

using json = nlohmann::json;
using Grammar = std::shared_ptr<const JsonGrammar>;

constexpr int64_t kLarge = int64_t{1} << 40;

// A tool's parameters: one required string under `pattern`.
json patterned_tool(const std::string& pattern) {
  return {{"type", "object"},
          {"properties", {{"k", {{"type", "string"}, {"pattern", pattern}}}}},
          {"required", {"k"}},
          {"additionalProperties", false}};
}

const char* const kPatternA = "^(a|b)*a(a|b){8}$";
const char* const kPatternB = "^(c|d)*c(c|d){6}$";

bool holds_pattern(const Grammar& g) {
  const JsonGrammar::Node& root = g->node(0);
  return root.key_nodes.size() == 1 && g->node(root.key_nodes[0]).pattern_form != nullptr;
}

// What a grammar holds, enough to tell two compiles of one schema apart: each node's kinds,
// keys and required ones, and the sizes of its automata.
std::string describe(const Grammar& g) {
  std::string out;
  for (int32_t i = 0; i < g->size(); ++i) {
    const JsonGrammar::Node& n = g->node(i);
    out += std::to_string(n.kinds) + "{";
    for (size_t k = 0; k < n.keys.size(); ++k) out += n.keys[k] + ":" + std::to_string(n.key_nodes[k]) + ",";
    out += "}" + n.required.to_string().substr(kJsonMaxKeys - 4);
    out += " p" + std::to_string(n.pattern ? n.pattern->size() : -1);
    out += " f" + std::to_string(n.pattern_form ? n.pattern_form->size() : -1) + ";";
  }
  return out;
}

// The work one cold compile of `schema` in the call form spends.
int64_t cold_cost(const json& schema) {
  RegexBudget probe;
  EXPECT_TRUE(JsonGrammar::from_schema(schema, "parameters", JsonSyntax::kGemmaCall, &probe).ok());
  return RegexBudget{}.work - probe.work;
}

TEST(JsonGrammarCache, AHitIsTheSameGrammarChargedAsTheColdCompile) {
  JsonGrammarCache cache(16, kLarge);
  const json schema = patterned_tool(kPatternA);
  RegexBudget cold_budget;
  auto cold = JsonGrammar::from_schema(schema, "parameters", JsonSyntax::kGemmaCall, &cold_budget);
  ASSERT_TRUE(cold.ok());

  RegexBudget first_budget;
  auto first = cache.from_schema(schema, "parameters", JsonSyntax::kGemmaCall, &first_budget);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  RegexBudget second_budget;
  auto second = cache.from_schema(schema, "parameters", JsonSyntax::kGemmaCall, &second_budget);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->get(), second->get());
  EXPECT_TRUE(holds_pattern(*second));
  EXPECT_EQ(describe(*second), describe(*cold));
  // The hit took from its budget what the cold compile took from its own.
  EXPECT_EQ(second_budget.work, cold_budget.work);
  EXPECT_EQ(second_budget.bytes, cold_budget.bytes);
  EXPECT_EQ(first_budget.work, cold_budget.work);
  EXPECT_LT(second_budget.work, RegexBudget{}.work);

  const JsonGrammarCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.entries, 1);
  EXPECT_GE(s.bytes, json_grammar_bytes(**first));
  EXPECT_GT(json_grammar_bytes(**first), (*first)->node(1).pattern_form->bytes());

  // Null budget: a budget of its own, as from_schema.
  auto own = cache.from_schema(schema, "parameters", JsonSyntax::kGemmaCall, nullptr);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->get(), first->get());
}

// A budget that an earlier schema of the request has mostly spent: the cached compile's spend
// does not fit, so the answer is the cold compile's from that budget (the pattern ignored in the
// call form), and what is left of the budget is what the cold compile leaves. A cache that
// handed out its entry without looking at the budget gave the pattern here.
TEST(JsonGrammarCache, ABudgetThatCannotCoverTheSpendGetsTheColdAnswer) {
  const json schema = patterned_tool(kPatternA);
  const int64_t cost = cold_cost(schema);
  ASSERT_GT(cost, 1000);
  JsonGrammarCache cache(16, kLarge);
  RegexBudget warm;
  ASSERT_TRUE(cache.from_schema(schema, "parameters", JsonSyntax::kGemmaCall, &warm).ok());

  for (const int64_t left : {cost / 2, cost - 1, int64_t{0}, int64_t{-5}}) {
    RegexBudget cold_budget{.work = left};
    auto cold = JsonGrammar::from_schema(schema, "parameters", JsonSyntax::kGemmaCall, &cold_budget);
    RegexBudget cached_budget{.work = left};
    auto cached = cache.from_schema(schema, "parameters", JsonSyntax::kGemmaCall, &cached_budget);
    ASSERT_EQ(cached.ok(), cold.ok()) << left;
    ASSERT_TRUE(cached.ok()) << left;
    // (One step short, the cold compile's last spends come after its last check: it keeps the
    // pattern and ends below zero. The cache must not tell that from a real shortfall.)
    if (left <= cost / 2) {
      EXPECT_FALSE(holds_pattern(*cached)) << left;
    }
    EXPECT_EQ(describe(*cached), describe(*cold)) << left;
    EXPECT_EQ(cached_budget.work, cold_budget.work) << left;
    EXPECT_EQ(cached_budget.bytes, cold_budget.bytes) << left;
  }
  // Exactly the spend left: a hit, which leaves nothing, as the cold compile does.
  RegexBudget exact{.work = cost};
  auto hit = cache.from_schema(schema, "parameters", JsonSyntax::kGemmaCall, &exact);
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(holds_pattern(*hit));
  EXPECT_EQ(exact.work, 0);
  // The same in the JSON syntax, where a pattern past the budget is an error.
  const json string_schema = {{"type", "string"}, {"pattern", kPatternA}};
  RegexBudget json_warm;
  ASSERT_TRUE(cache.from_schema(string_schema, "schema", JsonSyntax::kJson, &json_warm).ok());
  RegexBudget short_cold{.work = cost / 2};
  auto refused_cold = JsonGrammar::from_schema(string_schema, "schema", JsonSyntax::kJson, &short_cold);
  RegexBudget short_cached{.work = cost / 2};
  auto refused_cached = cache.from_schema(string_schema, "schema", JsonSyntax::kJson, &short_cached);
  ASSERT_FALSE(refused_cold.ok());
  ASSERT_FALSE(refused_cached.ok());
  EXPECT_EQ(refused_cached.status().message(), refused_cold.status().message());
  EXPECT_EQ(short_cached.work, short_cold.work);
}

// A compile that ran past its budget is not kept: a later, richer budget compiles the pattern.
TEST(JsonGrammarCache, ACompilePastItsBudgetIsNotKept) {
  const json schema = patterned_tool(kPatternA);
  const int64_t cost = cold_cost(schema);
  JsonGrammarCache cache(16, kLarge);
  RegexBudget poor{.work = cost / 2};
  auto without = cache.from_schema(schema, "parameters", JsonSyntax::kGemmaCall, &poor);
  ASSERT_TRUE(without.ok());
  EXPECT_FALSE(holds_pattern(*without));
  EXPECT_EQ(cache.stats().entries, 0);
  RegexBudget rich;
  auto with = cache.from_schema(schema, "parameters", JsonSyntax::kGemmaCall, &rich);
  ASSERT_TRUE(with.ok());
  EXPECT_TRUE(holds_pattern(*with));
  EXPECT_EQ(cache.stats().entries, 1);
  EXPECT_EQ(cache.stats().misses, 2u);
}

// A schema refused for what it says (not for the budget) is kept as that error.
TEST(JsonGrammarCache, ASchemaRefusedWithinItsBudgetIsKeptAsItsError) {
  JsonGrammarCache cache(16, kLarge);
  const json schema = {{"type", "array"}, {"prefixItems", json::array({{{"type", "string"}}})}};
  auto cold = JsonGrammar::from_schema(schema, "schema");
  ASSERT_FALSE(cold.ok());
  for (int i = 0; i < 3; ++i) {
    RegexBudget b;
    auto r = cache.from_schema(schema, "schema", JsonSyntax::kJson, &b);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), cold.status().code());
    EXPECT_EQ(r.status().message(), cold.status().message());
  }
  EXPECT_EQ(cache.stats().hits, 2u);
  EXPECT_EQ(cache.stats().entries, 1);
}

TEST(JsonGrammarCache, KeysTellDifferentInputsApart) {
  const auto key = [](const json& s, const std::string& path = "p", JsonSyntax syntax = JsonSyntax::kJson) {
    return json_grammar_cache_key(s, path, syntax);
  };
  const std::vector<json> values = {
      json(1),   json(1u),  json(1.0),  json(0.0),   json(-0.0),          json(nullptr),
      json(""),  json("1"), json(true), json(false), json::array(),       json::object(),
      json::array({"ab", "c"}), json::array({"a", "bc"}), json({{"a", "bc"}}), json({{"ab", "c"}}),
      json::array({json::array()}), json::array({json::array(), json::array()}),
  };
  for (size_t i = 0; i < values.size(); ++i) {
    for (size_t j = 0; j < values.size(); ++j) {
      EXPECT_EQ(key(values[i]) == key(values[j]), i == j) << values[i].dump() << " " << values[j].dump();
    }
  }
  EXPECT_NE(key(json::object(), "a"), key(json::object(), "b"));
  EXPECT_NE(key(json::object(), "p", JsonSyntax::kJson), key(json::object(), "p", JsonSyntax::kGemmaCall));
  // One value, however its members were written.
  EXPECT_EQ(key(json::parse(R"({"b":1,"a":[2]})")), key(json::parse(R"({"a":[2],"b":1})")));

  // A cache keeps them apart: a number key beside a path, the same schema in another syntax.
  JsonGrammarCache cache(16, kLarge);
  const json schema = patterned_tool(kPatternA);
  RegexBudget b1, b2;
  auto call = cache.from_schema(schema, "parameters", JsonSyntax::kGemmaCall, &b1);
  auto plain = cache.from_schema(schema, "parameters", JsonSyntax::kJson, &b2);
  ASSERT_TRUE(call.ok() && plain.ok());
  EXPECT_NE(call->get(), plain->get());
  EXPECT_EQ((*call)->syntax(), JsonSyntax::kGemmaCall);
  EXPECT_EQ((*plain)->syntax(), JsonSyntax::kJson);
}

TEST(JsonGrammarCache, TheLeastRecentlyUsedEntryGoesFirstByCount) {
  JsonGrammarCache cache(2, kLarge);
  const json a = patterned_tool(kPatternA), b = patterned_tool(kPatternB), c = patterned_tool("^x+$");
  const auto get = [&](const json& s) {
    RegexBudget budget;
    auto r = cache.from_schema(s, "parameters", JsonSyntax::kGemmaCall, &budget);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : nullptr;
  };
  const Grammar ga = get(a);
  const Grammar gb = get(b);
  EXPECT_EQ(get(a), ga);  // a is now the more recent
  get(c);                 // drops b
  EXPECT_EQ(cache.stats().entries, 2);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(get(a), ga);
  const uint64_t misses = cache.stats().misses;
  EXPECT_NE(get(b), gb);  // compiled again: a new object
  EXPECT_EQ(cache.stats().misses, misses + 1);
  EXPECT_EQ(cache.stats().entries, 2);
}

TEST(JsonGrammarCache, TheLeastRecentlyUsedEntryGoesFirstByBytes) {
  const json a = patterned_tool(kPatternA), b = patterned_tool(kPatternB);
  int64_t bytes_a = 0, bytes_b = 0;
  {
    JsonGrammarCache probe(16, kLarge);
    RegexBudget budget;
    ASSERT_TRUE(probe.from_schema(a, "parameters", JsonSyntax::kGemmaCall, &budget).ok());
    bytes_a = probe.stats().bytes;
    ASSERT_TRUE(probe.from_schema(b, "parameters", JsonSyntax::kGemmaCall, &budget).ok());
    bytes_b = probe.stats().bytes - bytes_a;
  }
  ASSERT_GT(bytes_a, 1000);
  ASSERT_GT(bytes_b, 1000);
  // Room for either alone, not both.
  JsonGrammarCache cache(16, std::max(bytes_a, bytes_b) + 16);
  RegexBudget budget;
  ASSERT_TRUE(cache.from_schema(a, "parameters", JsonSyntax::kGemmaCall, &budget).ok());
  ASSERT_TRUE(cache.from_schema(b, "parameters", JsonSyntax::kGemmaCall, &budget).ok());
  JsonGrammarCacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 1);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.bytes, bytes_b);
  // b is there, a is not.
  RegexBudget again;
  ASSERT_TRUE(cache.from_schema(b, "parameters", JsonSyntax::kGemmaCall, &again).ok());
  EXPECT_EQ(cache.stats().hits, 1u);
  ASSERT_TRUE(cache.from_schema(a, "parameters", JsonSyntax::kGemmaCall, &again).ok());
  EXPECT_EQ(cache.stats().misses, 3u);
  // An outcome larger than the whole bound is not kept (and drops nothing).
  JsonGrammarCache tiny(16, bytes_a / 2);
  ASSERT_TRUE(tiny.from_schema(a, "parameters", JsonSyntax::kGemmaCall, &again).ok());
  EXPECT_EQ(tiny.stats().entries, 0);
  EXPECT_EQ(tiny.stats().bytes, 0);
}

// Threads compiling the same and different schemas at once: every answer is the cold one, every
// budget charged as the cold compile charges its own, and the counts add up.
TEST(JsonGrammarCache, ManyThreadsAtOnce) {
  std::vector<json> schemas;
  for (int i = 0; i < 6; ++i) {
    schemas.push_back(patterned_tool("^(a|b)*a(a|b){" + std::to_string(3 + i) + "}$"));
  }
  std::vector<std::string> cold_described;
  std::vector<RegexBudget> cold_left;
  for (const json& s : schemas) {
    RegexBudget b;
    auto g = JsonGrammar::from_schema(s, "parameters", JsonSyntax::kGemmaCall, &b);
    ASSERT_TRUE(g.ok());
    cold_described.push_back(describe(*g));
    cold_left.push_back(b);
  }
  JsonGrammarCache cache(4, kLarge);  // fewer entries than schemas: evictions while others read
  constexpr int kThreads = 8;
  constexpr int kRounds = 40;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const size_t i = static_cast<size_t>((t + r * (t % 3 + 1)) % static_cast<int>(schemas.size()));
        RegexBudget b;
        auto g = cache.from_schema(schemas[i], "parameters", JsonSyntax::kGemmaCall, &b);
        if (!g.ok() || describe(*g) != cold_described[i] || b.work != cold_left[i].work ||
            b.bytes != cold_left[i].bytes) {
          ++wrong;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  const JsonGrammarCacheStats s = cache.stats();
  EXPECT_EQ(s.hits + s.misses, static_cast<uint64_t>(kThreads * kRounds));
  EXPECT_LE(s.entries, 4);
  EXPECT_GT(s.hits, 0u);
}

}  // namespace
}  // namespace gs::text
