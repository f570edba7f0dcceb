// What a request's JSON Schema grammars cost to get: decision 0065's agent tool list (40 tools
// of 8 pattern-constrained properties each) compiled cold from one shared pattern budget, as
// each request did, and taken from a warm JsonGrammarCache (decision 0066); and an output schema
// (response_format) of 40 pattern-constrained properties, two kinds, cold and from the cache
// (decision 0072).
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

// An output schema (response_format json_schema) of 40 properties, each under a format or a
// pattern of the kinds the tools above carry, 8 of them the property's own; 4 required.
const json& output_schema() {
  static const json schema = [] {
    const char* const kFormats[] = {"date", "date-time", "uuid", "email"};
    const char* const kPatterns[] = {R"(^\+?[0-9][0-9 ()-]{6,18}[0-9]$)",
                                     R"(^https?://[A-Za-z0-9.-]+(/[A-Za-z0-9._~%/-]*)?$)", "^[A-Z]{3}$"};
    json props = json::object();
    for (int i = 0; i < kTools; ++i) {
      json p = {{"type", "string"}};
      const int kind = i % 8;
      if (kind < 4) {
        p["format"] = kFormats[kind];
      } else if (kind < 7) {
        p["pattern"] = kPatterns[kind - 4];
      } else {
        p["pattern"] = "^F" + std::to_string(i) + "-[0-9]{4}$";
      }
      props["f" + std::to_string(i)] = std::move(p);
    }
    return json{{"type", "object"},
                {"properties", props},
                {"required", {"f0", "f5", "f7", "f12"}},
                {"additionalProperties", false}};
  }();
  return schema;
}

// 40 properties under validation patterns with counted repeats (e-mail, URL, phone and IBAN-like
// forms, each with its own bounds) and a maxLength: the kind of schema whose compile takes about
// half of a request's pattern budget. scripts/grammar_cache_request_bench.py sends this one.
const json& bounded_schema() {
  static const json schema = [] {
    json props = json::object();
    for (int i = 0; i < kTools; ++i) {
      const std::string n = std::to_string(i);
      std::string p;
      switch (i % 4) {
        case 0:
          p = R"(^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63}){0,3}\.[a-z]{2,)" +
              std::to_string(6 + i) + "}$";
          break;
        case 1: p = R"(^https://[a-z0-9-]{1,63}(\.[a-z0-9-]{1,63}){1,4}/p)" + n + "/[A-Za-z0-9_-]{1,128}$"; break;
        case 2:
          p = R"(^\+?[0-9]{1,3}[ -]?\(?[0-9]{1,4}\)?([ -]?[0-9]{2,4}){2,)" + std::to_string(3 + i % 5) + "}$";
          break;
        default: p = "^[A-Z]{2}[0-9]{2}[A-Z0-9]{" + std::to_string(10 + i % 20) + ",30}$"; break;
      }
      props["f" + n] = {{"type", "string"}, {"pattern", p}, {"maxLength", 254}};
    }
    return json{{"type", "object"}, {"properties", props}, {"additionalProperties", false}};
  }();
  return schema;
}

constexpr const char* kOutputPath = "response_format.json_schema.schema";

void output_schema_cold(benchmark::State& state, const json& schema) {
  for (auto _ : state) {
    auto g = JsonGrammar::from_schema(schema, kOutputPath, JsonSyntax::kJson, nullptr);
    if (!g.ok()) state.SkipWithError(g.status().to_string().c_str());
    benchmark::DoNotOptimize(g);
  }
}

void output_schema_warm(benchmark::State& state, const json& schema) {
  JsonGrammarCache cache(256, int64_t{64} << 20);
  (void)cache.from_schema(schema, kOutputPath, JsonSyntax::kJson, nullptr);
  for (auto _ : state) {
    auto g = cache.from_schema(schema, kOutputPath, JsonSyntax::kJson, nullptr);
    benchmark::DoNotOptimize(g);
  }
  state.counters["hits"] = static_cast<double>(cache.stats().hits);
  state.counters["entries"] = static_cast<double>(cache.stats().entries);
  state.counters["cache_KiB"] = static_cast<double>(cache.stats().bytes) / 1024;
}

void BM_OutputSchemaCold(benchmark::State& state) { output_schema_cold(state, output_schema()); }
BENCHMARK(BM_OutputSchemaCold)->Unit(benchmark::kMillisecond);
void BM_OutputSchemaWarmCache(benchmark::State& state) { output_schema_warm(state, output_schema()); }
BENCHMARK(BM_OutputSchemaWarmCache)->Unit(benchmark::kMicrosecond);
void BM_OutputSchemaBoundedCold(benchmark::State& state) { output_schema_cold(state, bounded_schema()); }
BENCHMARK(BM_OutputSchemaBoundedCold)->Unit(benchmark::kMillisecond);
void BM_OutputSchemaBoundedWarmCache(benchmark::State& state) { output_schema_warm(state, bounded_schema()); }
BENCHMARK(BM_OutputSchemaBoundedWarmCache)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
