// The tool grammar cache over HTTP (decision 0066), the shakes model on the CPU: requests that
// resend their tools get, from a server with the cache, the answers a server without it gives,
// forced and automatic calls, greedy and sampled, with the hits counted on /metrics.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "server/shakes_http.h"

namespace gs {
namespace {

using json = nlohmann::json;

json tools_json() {
  return json::parse(R"([
    {"type":"function","function":{"name":"book","parameters":{"type":"object","properties":{
      "day":{"type":"string","format":"date"},"code":{"type":"string","pattern":"^[A-Z]{3}$"},
      "seats":{"type":"integer","minimum":1,"maximum":9}},"required":["day","code"],"additionalProperties":false}}},
    {"type":"function","function":{"name":"mail","parameters":{"type":"object","properties":{
      "to":{"type":"string","format":"email"},"ref":{"type":"string","pattern":"^R-[0-9]{4}$"}},
      "required":["to","ref"],"additionalProperties":false}}}])");
}

std::vector<json> requests() {
  std::vector<json> out;
  for (const bool forced : {true, false}) {
    for (const int seed : {0, 7, 11}) {
      json b = {{"messages", json::array({{{"role", "user"}, {"content", "Book a flight and mail me."}}})},
                {"tools", tools_json()},
                {"max_tokens", 48},
                {"temperature", seed == 0 ? 0.0 : 1.0},
                {"seed", seed}};
      if (forced) {
        b["tool_choice"] = "required";
      } else {
        // Under auto the shakes model calls only when pushed toward the call opener.
        b["logit_bias"] = json::object();
        b["chat_template_kwargs"] = {{"enable_thinking", false}};
      }
      out.push_back(std::move(b));
    }
  }
  return out;
}

// What the answer says, without what differs by design (ids, timestamps).
std::string answer(const httplib::Result& r) {
  if (!r) return "no response";
  if (r->status != 200) return std::to_string(r->status) + " " + r->body;
  const json choice = json::parse(r->body)["choices"][0];
  const json& m = choice["message"];
  std::string out = choice["finish_reason"].dump() + " " + m["content"].dump() + " " +
                    (m.contains("reasoning_content") ? m["reasoning_content"].dump() : "-");
  if (m.contains("tool_calls")) {
    for (const json& call : m["tool_calls"]) out += " " + call["function"].dump();
  }
  return out;
}

TEST(ToolGrammarCacheHttp, ResentToolsGetTheAnswersOfAServerWithoutTheCache) {
  std::vector<json> bodies = requests();
  std::vector<std::string> without;
  {
    test::ShakesHttp server;
    server::ServerOptions off;
    off.grammar_cache_entries = 0;
    server.start(test::shakes_engine_options(false, false), off);
    // The automatic calls' bias, toward the call opener.
    const int32_t opener = *server.tokenizer().find_token("<|tool_call>");
    for (json& b : bodies) {
      if (b.contains("logit_bias")) b["logit_bias"] = {{std::to_string(opener), 20}};
      without.push_back(answer(server.post(b)));
    }
    EXPECT_EQ(server.http().counters().grammar_cache.misses, 0u);
  }
  int calls = 0;
  for (const std::string& a : without) calls += a.find("\"arguments\"") != std::string::npos;
  std::printf("[ info ] %d of %zu answers called a tool\n", calls, without.size());
  EXPECT_GT(calls, 0) << "no answer called a tool";

  test::ShakesHttp server;
  server.start(test::shakes_engine_options(false, false), server::ServerOptions{});
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < bodies.size(); ++i) {
      EXPECT_EQ(answer(server.post(bodies[i])), without[i]) << "round " << round << ", request " << i;
    }
  }
  const text::JsonGrammarCacheStats stats = server.http().counters().grammar_cache;
  // Two tools, compiled once; every later request takes both from the cache.
  EXPECT_EQ(stats.misses, 2u);
  EXPECT_EQ(stats.hits, 2 * (2 * bodies.size()) - 2);
  EXPECT_EQ(stats.entries, 2);
  httplib::Client c("127.0.0.1", server.http().port());
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("gemmaserve_tool_grammar_cache_hits_total " + std::to_string(stats.hits) + "\n"),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("gemmaserve_tool_grammar_cache_entries 2\n"), std::string::npos);
}

}  // namespace
}  // namespace gs
