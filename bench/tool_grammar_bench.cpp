// What a request's tool argument grammars cost to get (decision 0066): decision 0065's agent
// tool list (40 tools of 8 pattern-constrained properties each) compiled cold from one shared
// pattern budget, as each request did, and taken from a warm JsonGrammarCache.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "text/json_grammar.h"
#include "text/json_grammar_cache.h"
#include "text/regex_dfa.h"

namespace {

using nlohmann::json;
using gs::text::JsonGrammar;
using gs::text::JsonGrammarCache;
using gs::text::JsonSyntax;
using gs::text::RegexBudget;

constexpr int kTools = 40;

// Tool `i`'s parameters: the formats and patterns real tools carry, one of them the tool's own.
json tool_parameters(int i) {
  const auto str = [](const char* key, const std::string& value) {
    return json{{"type", "string"}, {key, value}};
  };
  json props = {
      {"day", str("format", "date")},
      {"at", str("format", "date-time")},
      {"id", str("format", "uuid")},
      {"to", str("format", "email")},
      {"phone", str("pattern", R"(^\+?[0-9][0-9 ()-]{6,18}[0-9]$)")},
      {"url", str("pattern", R"(^https?://[A-Za-z0-9.-]+(/[A-Za-z0-9._~%/-]*)?$)")},
      {"code", str("pattern", "^[A-Z]{3}$")},
      {"ref", str("pattern", "^T" + std::to_string(i) + "-[0-9]{4}$")},
      {"note", {{"type", "string"}}},
  };
  return {{"type", "object"}, {"properties", props}, {"required", {"day", "ref"}}, {"additionalProperties", false}};
}

const std::vector<json>& tools() {
  static const std::vector<json> t = [] {
    std::vector<json> v;
    for (int i = 0; i < kTools; ++i) v.push_back(tool_parameters(i));
    return v;
  }();
  return t;
}

void BM_FortyToolsCold(benchmark::State& state) {
  for (auto _ : state) {
    RegexBudget budget;
    for (const json& p : tools()) {
      auto g = JsonGrammar::from_schema(p, "parameters", JsonSyntax::kGemmaCall, &budget);
      benchmark::DoNotOptimize(g);
    }
  }
}
BENCHMARK(BM_FortyToolsCold)->Unit(benchmark::kMillisecond);

void BM_FortyToolsWarmCache(benchmark::State& state) {
  JsonGrammarCache cache(256, int64_t{64} << 20);
  for (const json& p : tools()) {
    RegexBudget b;
    (void)cache.from_schema(p, "parameters", JsonSyntax::kGemmaCall, &b);
  }
  for (auto _ : state) {
    RegexBudget budget;
    for (const json& p : tools()) {
      auto g = cache.from_schema(p, "parameters", JsonSyntax::kGemmaCall, &budget);
      benchmark::DoNotOptimize(g);
    }
  }
  state.counters["hits"] = static_cast<double>(cache.stats().hits);
  state.counters["cache_MiB"] = static_cast<double>(cache.stats().bytes) / (1 << 20);
}
BENCHMARK(BM_FortyToolsWarmCache)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
