// OpenAI's `n` (decision 0030): n choices, each its own engine request, in whole and streamed
// responses of both endpoints: indexes, per-choice finish chunks, usage over the choices,
// seeds, limits, failures and clients that leave.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "core/host_memory.h"
#include "server/choice_set.h"
#include "server/openai_format.h"
#include "server/request_plan.h"
#include "server_fixture.h"

namespace gs::server {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using test::LiveServer;
using test::ServerFixtureOptions;

json chat_body(json extra = json::object()) {
  json body{{"messages", json::array({{{"role", "user"}, {"content", "Say something."}}})}, {"max_tokens", 100}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

json post_json(const LiveServer& s, const std::string& path, const json& body, int status = 200) {
  auto r = s.post(path, body.dump());
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, status) << r->body;
  return json::parse(r->body, nullptr, false);
}

// A stream's chunks per choice index, the usage chunk, and checks of the stream's shape.
struct StreamedChoices {
  std::map<int, std::vector<json>> chunks;  // the choice entries, by index
  std::map<int, std::string> text;          // content (chat) or text (completions), by index
  std::map<int, std::string> finish;
  std::map<int, int> n_finish;              // finish chunks per index
  json usage;
  int n_usage_chunks = 0;
  bool done_last = false;
  bool usage_after_every_finish = true;
};

StreamedChoices stream(const LiveServer& s, const std::string& path, json body) {
  body["stream"] = true;
  auto r = s.post(path, body.dump());
  StreamedChoices out;
  EXPECT_TRUE(r);
  if (!r) return out;
  EXPECT_EQ(r->status, 200) << r->body;
  const auto events = test::sse_payloads(r->body);
  out.done_last = !events.empty() && events.back() == "[DONE]";
  for (const auto& e : events) {
    if (e == "[DONE]") continue;
    const json c = json::parse(e);
    if (c.contains("usage") && !c["usage"].is_null()) {
      out.usage = c["usage"];
      out.n_usage_chunks++;
      EXPECT_TRUE(c["choices"].empty()) << e;
      continue;
    }
    EXPECT_EQ(c["choices"].size(), 1u) << e;
    if (out.n_usage_chunks > 0) out.usage_after_every_finish = false;
    for (const json& ch : c["choices"]) {
      const int i = ch["index"];
      out.chunks[i].push_back(ch);
      if (ch.contains("delta")) {
        if (ch["delta"].contains("content") && ch["delta"]["content"].is_string()) out.text[i] += ch["delta"]["content"];
      } else if (ch["text"].is_string()) {
        out.text[i] += ch["text"];
      }
      if (ch["finish_reason"].is_string()) {
        out.finish[i] = ch["finish_reason"];
        out.n_finish[i]++;
      }
    }
  }
  return out;
}

TEST(Choices, ChoicePlanSeedsChoiceIWithSeedPlusI) {
  GenerationPlan plan;
  plan.request.prompt = {2, 10, 11};
  plan.request.max_tokens = 7;
  plan.request.sampling.temperature = 0.8f;
  plan.request.sampling.has_seed = true;
  plan.request.sampling.seed = 41;
  for (int i = 0; i < 4; ++i) {
    const GenerationPlan p = choice_plan(plan, i);
    EXPECT_TRUE(p.request.sampling.has_seed);
    EXPECT_EQ(p.request.sampling.seed, 41u + static_cast<uint64_t>(i));
    EXPECT_EQ(p.request.prompt, plan.request.prompt);
    EXPECT_EQ(p.request.max_tokens, 7);
    EXPECT_EQ(p.request.sampling.temperature, 0.8f);
  }
  // The seed wraps (a seed of -1 reads as 2^64 - 1).
  plan.request.sampling.seed = ~uint64_t{0};
  EXPECT_EQ(choice_plan(plan, 2).request.sampling.seed, 1u);
  // Without a seed every choice draws its own.
  plan.request.sampling.has_seed = false;
  plan.request.sampling.seed = 0;
  EXPECT_FALSE(choice_plan(plan, 3).request.sampling.has_seed);
  EXPECT_EQ(choice_plan(plan, 3).request.sampling.seed, 0u);
}

TEST(Choices, UsageCountsThePromptOnceAndSumsTheCompletions) {
  GenerationResult a, b, c;
  a.usage = {.prompt_tokens = 20, .cached_tokens = 16, .completion_tokens = 5, .drafted_tokens = 4,
             .accepted_tokens = 2, .prefill_ms = 10, .decode_ms = 50, .queue_ms = 1};
  b.usage = {.prompt_tokens = 20, .cached_tokens = 0, .completion_tokens = 7, .drafted_tokens = 6,
             .accepted_tokens = 3, .prefill_ms = 30, .decode_ms = 40, .queue_ms = 2};
  c.usage = {.prompt_tokens = 20, .cached_tokens = 8, .completion_tokens = 1, .prefill_ms = 20, .decode_ms = 0};
  a.reasoning_tokens = 3;
  b.reasoning_tokens = 4;
  const ResponseUsage u = combine_usage({&a, &b, &c});
  EXPECT_EQ(u.usage.prompt_tokens, 20);
  EXPECT_EQ(u.usage.cached_tokens, 0);  // the fewest any choice reused
  EXPECT_EQ(u.usage.completion_tokens, 13);
  EXPECT_EQ(u.usage.drafted_tokens, 10);
  EXPECT_EQ(u.usage.accepted_tokens, 5);
  EXPECT_EQ(u.usage.prefill_ms, 30);
  EXPECT_EQ(u.usage.decode_ms, 50);
  EXPECT_EQ(u.usage.queue_ms, 2);
  EXPECT_EQ(u.reasoning_tokens, 7);
  const json j = usage_json(u);
  EXPECT_EQ(j["total_tokens"], 33);
  EXPECT_EQ(j["completion_tokens_details"]["reasoning_tokens"], 7);
  // One choice: its own usage.
  const ResponseUsage one = combine_usage({&a});
  EXPECT_EQ(one.usage.cached_tokens, 16);
  EXPECT_EQ(one.usage.completion_tokens, 5);
}

TEST(Choices, ChatWholeResponseHoldsNChoices) {
  LiveServer s;
  s.answer("<|channel>thought\nThink first.<channel|>Hello there.");
  const json one = post_json(s, "/v1/chat/completions", chat_body({{"logprobs", true}, {"top_logprobs", 2}}));
  const json r = post_json(s, "/v1/chat/completions", chat_body({{"n", 3}, {"logprobs", true}, {"top_logprobs", 2}}));
  ASSERT_EQ(r["choices"].size(), 3u) << r.dump();
  for (int i = 0; i < 3; ++i) {
    const json& c = r["choices"][i];
    EXPECT_EQ(c["index"], i);
    EXPECT_EQ(c["message"]["content"], "Hello there.");
    EXPECT_EQ(c["message"]["reasoning_content"], "Think first.");
    EXPECT_EQ(c["finish_reason"], "stop");
    ASSERT_TRUE(c["logprobs"].is_object()) << c.dump();
    EXPECT_EQ(c["logprobs"], one["choices"][0]["logprobs"]) << "choice " << i;
    EXPECT_EQ(c["logprobs"]["content"][0]["top_logprobs"].size(), 2u);
  }
  EXPECT_EQ(r["usage"]["prompt_tokens"], one["usage"]["prompt_tokens"]);
  EXPECT_EQ(r["usage"]["completion_tokens"], 3 * one["usage"]["completion_tokens"].get<int>());
  EXPECT_EQ(r["usage"]["total_tokens"], r["usage"]["prompt_tokens"].get<int>() + r["usage"]["completion_tokens"].get<int>());
  EXPECT_EQ(r["usage"]["completion_tokens_details"]["reasoning_tokens"],
            3 * one["usage"]["completion_tokens_details"]["reasoning_tokens"].get<int>());
  // n: 1 is the response it always was.
  const json n1 = post_json(s, "/v1/chat/completions", chat_body({{"n", 1}, {"logprobs", true}, {"top_logprobs", 2}}));
  ASSERT_EQ(n1["choices"].size(), 1u);
  EXPECT_EQ(n1["choices"][0], one["choices"][0]);
  EXPECT_EQ(n1["usage"]["completion_tokens"], one["usage"]["completion_tokens"]);
}

TEST(Choices, ChatStreamCarriesEachChoicesIndexAndFinish) {
  LiveServer s;
  s.answer("<|channel>thought\nThink first.<channel|>Hello there, friend.");
  const json whole = post_json(s, "/v1/chat/completions", chat_body({{"n", 3}}));
  const StreamedChoices st =
      stream(s, "/v1/chat/completions", chat_body({{"n", 3}, {"stream_options", {{"include_usage", true}}}}));
  EXPECT_TRUE(st.done_last);
  ASSERT_EQ(st.chunks.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_FALSE(st.chunks.at(i).empty());
    EXPECT_EQ(st.chunks.at(i).front()["delta"].value("role", ""), "assistant") << "choice " << i;
    EXPECT_EQ(st.text.at(i), "Hello there, friend.");
    EXPECT_EQ(st.n_finish.at(i), 1) << "choice " << i;
    EXPECT_EQ(st.finish.at(i), "stop");
    // The finish chunk is the choice's last.
    EXPECT_TRUE(st.chunks.at(i).back()["finish_reason"].is_string());
    std::string reasoning;
    for (const json& c : st.chunks.at(i)) reasoning += c["delta"].value("reasoning_content", "");
    EXPECT_EQ(reasoning, "Think first.");
  }
  EXPECT_EQ(st.n_usage_chunks, 1);
  EXPECT_TRUE(st.usage_after_every_finish);
  EXPECT_EQ(st.usage["completion_tokens"], whole["usage"]["completion_tokens"]);
  EXPECT_EQ(st.usage["prompt_tokens"], whole["usage"]["prompt_tokens"]);
}

TEST(Choices, ToolCallsAndStructuredOutputPerChoice) {
  LiveServer s;
  const json tool = json::parse(R"({"type":"function","function":{"name":"get_weather",
    "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}})");
  s.answer("<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|><|tool_response>");
  json r = post_json(s, "/v1/chat/completions", chat_body({{"n", 2}, {"tools", json::array({tool})}}));
  ASSERT_EQ(r["choices"].size(), 2u) << r.dump();
  std::set<std::string> ids;
  for (const json& c : r["choices"]) {
    EXPECT_EQ(c["finish_reason"], "tool_calls");
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << c.dump();
    EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(json::parse(c["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
              json::parse(R"({"city":"Oslo"})"));
    ids.insert(c["message"]["tool_calls"][0]["id"].get<std::string>());
  }
  EXPECT_EQ(ids.size(), 2u) << "each choice's call has its own id";
  // Streamed: each choice's call deltas under its own index.
  const StreamedChoices st = stream(s, "/v1/chat/completions", chat_body({{"n", 2}, {"tools", json::array({tool})}}));
  for (int i = 0; i < 2; ++i) {
    std::string args;
    for (const json& c : st.chunks.at(i)) {
      if (!c["delta"].contains("tool_calls")) continue;
      args += c["delta"]["tool_calls"][0]["function"].value("arguments", "");
    }
    EXPECT_EQ(json::parse(args), json::parse(R"({"city":"Oslo"})")) << "choice " << i;
    EXPECT_EQ(st.finish.at(i), "tool_calls");
  }
  // response_format holds for every choice.
  s.answer(R"({"city": "Oslo", "temp": 3})");
  r = post_json(s, "/v1/chat/completions", chat_body({{"n", 3}, {"response_format", {{"type", "json_object"}}}}));
  ASSERT_EQ(r["choices"].size(), 3u) << r.dump();
  for (const json& c : r["choices"]) {
    EXPECT_EQ(json::parse(c["message"]["content"].get<std::string>()), json::parse(R"({"city":"Oslo","temp":3})"));
  }
}

TEST(Choices, CompletionsWholeAndStreamed) {
  LiveServer s;
  s.answer(" to be or not");
  const json body{{"prompt", "ROMEO:"}, {"max_tokens", 20}, {"n", 2}, {"echo", true}};
  const json r = post_json(s, "/v1/completions", body);
  ASSERT_EQ(r["choices"].size(), 2u) << r.dump();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(r["choices"][i]["index"], i);
    EXPECT_EQ(r["choices"][i]["text"], "ROMEO: to be or not");
    EXPECT_EQ(r["choices"][i]["finish_reason"], "stop");
  }
  const StreamedChoices st = stream(s, "/v1/completions", body);
  ASSERT_EQ(st.text.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(st.text.at(i), "ROMEO: to be or not");
    EXPECT_EQ(st.n_finish.at(i), 1);
  }
  // Logprobs per choice: each choice's text offsets start at its own text.
  const json lp_body{{"prompt", "ROMEO:"}, {"max_tokens", 20}, {"logprobs", 1}};
  const json lp1 = post_json(s, "/v1/completions", lp_body);
  json lp_n = lp_body;
  lp_n["n"] = 2;
  const json lp = post_json(s, "/v1/completions", lp_n);
  ASSERT_EQ(lp["choices"].size(), 2u);
  for (const json& c : lp["choices"]) {
    ASSERT_TRUE(c["logprobs"].is_object()) << c.dump();
    EXPECT_EQ(c["logprobs"]["text_offset"][0], 0);
    EXPECT_EQ(c["logprobs"], lp1["choices"][0]["logprobs"]);
  }
  // Streamed, each choice's logprobs ride on its own chunks.
  const StreamedChoices lps = stream(s, "/v1/completions", lp_n);
  for (int i = 0; i < 2; ++i) {
    json tokens = json::array();
    for (const json& c : lps.chunks.at(i)) {
      if (c["logprobs"].is_object()) tokens.insert(tokens.end(), c["logprobs"]["tokens"].begin(), c["logprobs"]["tokens"].end());
    }
    EXPECT_EQ(tokens, lp1["choices"][0]["logprobs"]["tokens"]) << "choice " << i;
  }
  // best_of equal to n is n; more is refused.
  EXPECT_EQ(post_json(s, "/v1/completions", {{"prompt", "x"}, {"n", 2}, {"best_of", 2}})["choices"].size(), 2u);
  const json bad = post_json(s, "/v1/completions", {{"prompt", "x"}, {"n", 2}, {"best_of", 3}}, 400);
  EXPECT_EQ(bad["error"]["param"], "best_of");
}

// n above the cap, or above what the server can hold at once (slots and queue), is a 400
// naming n before anything is generated.
TEST(Choices, TooManyChoicesIsA400BeforeGenerating) {
  ServerFixtureOptions o;
  o.n_slots = 2;
  o.queue_size = 3;
  LiveServer s(o);
  s.answer("fine");
  for (const auto& [path, body] : {std::pair<std::string, json>{"/v1/chat/completions", chat_body({{"n", 6}})},
                                   {"/v1/completions", json{{"prompt", "x"}, {"n", 6}, {"stream", true}}},
                                   {"/v1/chat/completions", chat_body({{"n", kMaxChoices + 1}})}}) {
    const json r = post_json(s, path, body, 400);
    EXPECT_EQ(r["error"]["param"], "n") << r.dump();
  }
  EXPECT_EQ(s.runner->n_steps(), 0);
  EXPECT_EQ(s.engine->metrics().requests_total, 0u);
  // Five fit: two run, three wait for a slot.
  const json r = post_json(s, "/v1/chat/completions", chat_body({{"n", 5}}));
  EXPECT_EQ(r["choices"].size(), 5u);
}

// A response runs all its choices or none: when the queue has room for only some, none is
// queued, not even for a moment (they were queued one by one and the ones taken cancelled,
// which held their places until the loop's next step and refused the next request), and
// the answer is the 429. The room it did not take is there for the next request.
TEST(Choices, AQueueThatTakesOnlySomeChoicesTakesNone) {
  ServerFixtureOptions o;
  o.n_slots = 1;
  o.queue_size = 1;
  o.step_delay = 5ms;
  LiveServer s(o);
  s.answer("", /*endless=*/true);
  std::thread holder([&] { s.post("/v1/completions", R"({"prompt":"x","max_tokens":300})"); });
  for (int i = 0; i < 400 && s.engine->metrics().busy_slots == 0; ++i) std::this_thread::sleep_for(5ms);
  const EngineMetrics before = s.engine->metrics();
  auto r = s.post("/v1/completions", json{{"prompt", "y"}, {"max_tokens", 3}, {"n", 2}}.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_NE(r->body.find("the 2 choices of this response do not all fit"), std::string::npos) << r->body;
  const EngineMetrics after = s.engine->metrics();
  EXPECT_EQ(after.requests_total, before.requests_total) << "a choice was queued";
  EXPECT_EQ(after.requests_cancelled_total, before.requests_cancelled_total) << "a choice was queued";
  // One choice fits: it waits for the holder's slot and runs.
  auto one = s.post("/v1/completions", json{{"prompt", "y"}, {"max_tokens", 3}}.dump());
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200) << one->body;
  holder.join();
  test::expect_healthy(s);
}

// One choice's engine failure fails the response (a 5xx; an error event in a stream) and
// ends the other choices.
TEST(Choices, AFailureEndsEveryChoice) {
  ServerFixtureOptions o;
  o.step_delay = 2ms;
  LiveServer s(o);
  s.answer("la", /*endless=*/true);
  for (bool streamed : {false, true}) {
    json body = chat_body({{"n", 3}, {"max_tokens", 100000}, {"stream", streamed}});
    const uint64_t generated_before = s.engine->metrics().generated_tokens_total;
    std::optional<httplib::Result> r;
    std::thread client([&] { r.emplace(s.post("/v1/chat/completions", body.dump())); });
    for (int i = 0; i < 1000 && s.engine->metrics().generated_tokens_total < generated_before + 9; ++i) {
      std::this_thread::sleep_for(5ms);
    }
    s.runner->fail_next_steps(1);
    client.join();
    ASSERT_TRUE(r && *r);
    if (streamed) {
      EXPECT_EQ((*r)->status, 200);
      const auto events = test::sse_payloads((*r)->body);
      ASSERT_GE(events.size(), 2u);
      EXPECT_EQ(events.back(), "[DONE]");
      EXPECT_TRUE(json::parse(events[events.size() - 2]).contains("error")) << events[events.size() - 2];
    } else {
      EXPECT_EQ((*r)->status, 500) << (*r)->body;
    }
    for (int i = 0; i < 400 && s.engine->metrics().busy_slots > 0; ++i) std::this_thread::sleep_for(5ms);
    EXPECT_EQ(s.engine->metrics().busy_slots, 0) << (streamed ? "streamed" : "whole");
  }
  test::expect_healthy(s);
}

// The choices of a request share its stop strings (decision 0051): each choice's plan, parser
// and stop matcher held a copy of them and its own matching tables (5 bytes a byte), so 16
// choices of one 4 MB stop string took some 450 MB, 8 MB bodies over a GB each.
TEST(Choices, TheChoicesShareTheRequestsStopStrings) {
  if (!read_host_memory().have_malloc_counters) GTEST_SKIP() << "no malloc counters here";
  const auto tok = test::shakes_tokenizer();
  const std::string stop(size_t{4} << 20, 'x');
  RequestDefaults d;
  for (const bool chat : {false, true}) {
    Result<GenerationPlan> plan = Status(StatusCode::kInternal, "unplanned");
    if (chat) {
      auto req = parse_chat_request(chat_body({{"stop", json::array({stop})}, {"n", 16}}), d);
      ASSERT_TRUE(req.ok()) << req.status().to_string();
      plan = plan_chat(*req, *tok, PlanLimits{});
    } else {
      auto req = parse_completion_request(json{{"prompt", "ROMEO:"}, {"stop", json::array({stop})}, {"n", 16}}, d);
      ASSERT_TRUE(req.ok()) << req.status().to_string();
      plan = plan_completion(*req, *tok, PlanLimits{});
    }
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    const auto in_use = [] { return static_cast<int64_t>(read_host_memory().malloc_in_use_bytes); };
    const int64_t before = in_use();
    ChoiceSet choices(tok, *plan, 16);
    const int64_t grown = in_use() - before;
    EXPECT_LT(grown, int64_t{8} << 20) << (chat ? "chat: " : "completions: ") << grown << " bytes for 16 choices";
  }
}

// A client that leaves cancels every choice: the slots are freed.
TEST(Choices, AClientThatLeavesCancelsEveryChoice) {
  ServerFixtureOptions o;
  o.n_ctx = 1 << 20;
  o.step_delay = 2ms;
  LiveServer s(o);
  s.answer("", /*endless=*/true);
  for (bool streamed : {true, false}) {
    const uint64_t cancelled_before = s.engine->metrics().requests_cancelled_total;
    const json body = chat_body({{"n", 3}, {"max_tokens", 100000}, {"stream", streamed}});
    httplib::Client c("127.0.0.1", s.http->port());
    if (streamed) {
      // Leaves after the first bytes of the stream.
      httplib::Request req;
      req.method = "POST";
      req.path = "/v1/chat/completions";
      req.body = body.dump();
      req.set_header("Content-Type", "application/json");
      req.content_receiver = [](const char*, size_t, uint64_t, uint64_t) { return false; };
      c.send(req);
    } else {
      // Gives up waiting for the whole answer.
      c.set_read_timeout(0, 500000);
      c.Post("/v1/chat/completions", body.dump(), "application/json");
    }
    c.stop();
    bool freed = false;
    for (int i = 0; i < 400 && !freed; ++i) {
      const EngineMetrics m = s.engine->metrics();
      freed = m.requests_cancelled_total >= cancelled_before + 3 && m.busy_slots == 0;
      if (!freed) std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(freed) << (streamed ? "streamed" : "whole") << ": cancelled "
                       << s.engine->metrics().requests_cancelled_total - cancelled_before << " of 3";
  }
  s.answer("next");
  EXPECT_EQ(post_json(s, "/v1/chat/completions", chat_body({{"n", 2}}))["choices"].size(), 2u);
}

}  // namespace
}  // namespace gs::server
