// Output schemas through the grammar cache over HTTP (decision 0072), the shakes model on the
// CPU: requests that resend their schema on every route (chat's response_format json_schema and
// json_object, json_schema, guided_json and structured_outputs; /v1/completions; /completion;
// Messages' output_config.format; Responses' text.format) get, from a server with the cache, the
// answers a server without it gives, greedy and sampled; a refused schema gets the same error
// every time; the hits are counted on /metrics.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/shakes_http.h"

namespace gs {
namespace {

using json = nlohmann::json;

json schema() {
  return json::parse(R"({"type":"object","properties":{
      "code":{"type":"string","pattern":"^[A-Z]{3}$"},"day":{"type":"string","format":"date"},
      "seats":{"type":"integer","minimum":1,"maximum":9}},"required":["code","day"],"additionalProperties":false})");
}

json other_schema() {
  return json::parse(R"({"type":"object","properties":{"name":{"type":"string","maxLength":10},
      "ref":{"type":"string","pattern":"^R-[0-9]{4}$"}},"required":["name"],"additionalProperties":false})");
}

struct Call {
  std::string path;
  json body;
};

// The requests, each with its route: every spelling of an output schema, greedy and sampled.
std::vector<Call> calls(const json& s, const json& s2) {
  const json user = json::array({{{"role", "user"}, {"content", "Book a flight, as JSON."}}});
  std::vector<Call> out;
  for (const int seed : {0, 7}) {
    const auto sampling = [seed](json b) {
      b["temperature"] = seed == 0 ? 0.0 : 1.0;
      b["seed"] = seed;
      return b;
    };
    const auto chat = [&](json fields) {
      json b = {{"messages", user}, {"max_tokens", 40}, {"chat_template_kwargs", {{"enable_thinking", false}}}};
      b.update(fields);
      return Call{"/v1/chat/completions", sampling(b)};
    };
    out.push_back(chat({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "b"}, {"schema", s}}}}}}));
    out.push_back(chat({{"response_format", {{"type", "json_object"}, {"schema", s2}}}}));
    out.push_back(chat({{"json_schema", s}}));
    out.push_back(chat({{"guided_json", s.dump()}}));
    out.push_back(chat({{"structured_outputs", {{"json", s}}}}));
    out.push_back({"/v1/completions",
                   sampling({{"prompt", "A flight as JSON:"},
                             {"max_tokens", 40},
                             {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", s}}}}}})});
    out.push_back({"/completion", sampling({{"prompt", "A flight as JSON:"}, {"n_predict", 40}, {"json_schema", s}})});
    if (seed == 0) {  // the Messages route takes no seed: greedy only
      out.push_back({"/v1/messages",
                     {{"messages", user},
                      {"max_tokens", 40},
                      {"temperature", 0.0},
                      {"thinking", {{"type", "disabled"}}},
                      {"output_config", {{"format", {{"type", "json_schema"}, {"schema", s}}}}}}});
    }
    out.push_back({"/v1/responses",
                   sampling({{"input", "Book a flight, as JSON."},
                             {"max_output_tokens", 40},
                             {"reasoning", {{"effort", "none"}}},
                             {"text", {{"format", {{"type", "json_schema"}, {"name", "b"}, {"schema", s}}}}}})});
  }
  return out;
}

// Distinct (schema, field path) pairs among calls(): response_format.json_schema.schema (chat,
// completions, responses), response_format.schema, json_schema (chat, /completion),
// guided_json, structured_outputs.json, output_config.format.schema.
constexpr uint64_t kEntries = 6;

// What the answer says, without what differs by design (ids, timestamps, timings).
std::string answer(const Call& call, const httplib::Result& r) {
  if (!r) return "no response";
  if (r->status != 200) return std::to_string(r->status) + " " + r->body;
  const json b = json::parse(r->body);
  if (call.path == "/v1/chat/completions") {
    const json& c = b["choices"][0];
    return c["finish_reason"].dump() + " " + c["message"]["content"].dump();
  }
  if (call.path == "/v1/completions") return b["choices"][0]["finish_reason"].dump() + " " + b["choices"][0]["text"].dump();
  if (call.path == "/completion") return b["stop_type"].dump() + " " + b["content"].dump() + " " + b["tokens_predicted"].dump();
  if (call.path == "/v1/messages") return b["stop_reason"].dump() + " " + b["content"].dump() + " " + b["usage"].dump();
  std::string out = b["status"].dump();
  for (const json& item : b["output"]) {
    if (item["type"] != "message") continue;
    for (const json& part : item["content"]) out += " " + part.value("text", std::string());
  }
  return out + " " + b["usage"]["output_tokens"].dump();
}

// A schema refused within its budget (kept as its error) and one past it (never kept).
std::vector<Call> refused() {
  const json unsupported = {{"type", "object"},
                            {"properties", {{"k", {{"type", "array"}, {"prefixItems", json::array({{{"type", "string"}}})}}}}}};
  const json too_big = {{"type", "object"},
                        {"properties", {{"a", {{"type", "string"}, {"pattern", "((a|aa)*){1000}x{3000}"}}}}}};
  const json user = json::array({{{"role", "user"}, {"content", "hi"}}});
  std::vector<Call> out;
  for (const json& s : {unsupported, too_big}) {
    out.push_back({"/v1/chat/completions",
                   {{"messages", user}, {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", s}}}}}}});
    out.push_back({"/v1/chat/completions", {{"messages", user}, {"guided_json", s}}});
    out.push_back({"/v1/messages",
                   {{"messages", user}, {"max_tokens", 8}, {"output_config", {{"format", {{"type", "json_schema"}, {"schema", s}}}}}}});
    out.push_back({"/v1/responses", {{"input", "hi"}, {"text", {{"format", {{"type", "json_schema"}, {"name", "x"}, {"schema", s}}}}}}});
  }
  return out;
}

TEST(OutputSchemaCacheHttp, ResentSchemasGetTheAnswersOfAServerWithoutTheCache) {
  const std::vector<Call> requests = calls(schema(), other_schema());
  const std::vector<Call> errors = refused();
  std::vector<std::string> without, without_errors;
  {
    test::ShakesHttp server;
    server::ServerOptions off;
    off.grammar_cache_entries = 0;
    server.start(test::shakes_engine_options(false, false), off);
    for (const Call& c : requests) without.push_back(answer(c, server.post(c.body, c.path)));
    for (const Call& c : errors) without_errors.push_back(answer(c, server.post(c.body, c.path)));
    EXPECT_EQ(server.http().counters().grammar_cache.misses, 0u);
  }
  int json_answers = 0;
  for (size_t i = 0; i < without.size(); ++i) {
    EXPECT_EQ(without[i].rfind("no response", 0), std::string::npos) << requests[i].path;
    EXPECT_EQ(without[i].rfind("\"", 0), 0u) << requests[i].path << ": " << without[i];  // not an error status
    json_answers += without[i].find("code") != std::string::npos || without[i].find("name") != std::string::npos;
  }
  std::printf("[ info ] %d of %zu answers hold a key of their schema\n", json_answers, without.size());
  for (size_t i = 0; i < without_errors.size(); ++i) {
    EXPECT_EQ(without_errors[i].rfind("400 ", 0), 0u) << errors[i].path << ": " << without_errors[i];
  }

  test::ShakesHttp server;
  server.start(test::shakes_engine_options(false, false), server::ServerOptions{});
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(answer(requests[i], server.post(requests[i].body, requests[i].path)), without[i])
          << "round " << round << ", " << requests[i].path << " " << i;
    }
    for (size_t i = 0; i < errors.size(); ++i) {
      EXPECT_EQ(answer(errors[i], server.post(errors[i].body, errors[i].path)), without_errors[i])
          << "round " << round << ", " << errors[i].path << " " << i;
    }
  }
  const text::JsonGrammarCacheStats stats = server.http().counters().grammar_cache;
  // Each (schema, field) compiled once; the unsupported schema kept as its error under its four
  // fields (chat's response_format and the Responses route's text.format share one); the
  // schema past the budget compiled by every request.
  const uint64_t refused_entries = 3;
  const uint64_t unsupported_lookups = 2 * errors.size() / 2;  // two rounds of half the errors
  const uint64_t past_budget_lookups = 2 * errors.size() / 2;
  EXPECT_EQ(stats.entries, static_cast<int64_t>(kEntries + refused_entries));
  EXPECT_EQ(stats.misses, kEntries + refused_entries + past_budget_lookups);
  EXPECT_EQ(stats.hits, (2 * requests.size() - kEntries) + (unsupported_lookups - refused_entries));
  httplib::Client c("127.0.0.1", server.http().port());
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  for (const char* name : {"gemmaserve_grammar_cache_hits_total ", "gemmaserve_tool_grammar_cache_hits_total "}) {
    EXPECT_NE(metrics->body.find(name + std::to_string(stats.hits) + "\n"), std::string::npos) << metrics->body;
  }
  for (const char* name : {"gemmaserve_grammar_cache_entries ", "gemmaserve_tool_grammar_cache_entries "}) {
    EXPECT_NE(metrics->body.find(name + std::to_string(stats.entries) + "\n"), std::string::npos) << metrics->body;
  }
}

}  // namespace
}  // namespace gs
