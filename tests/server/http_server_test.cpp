// The HTTP layer over a live loopback server: health, models, metrics, auth, limits, bad
// input, text completions (whole and streamed), UTF-8 safety, queue limits, disconnects.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>
#include <optional>
#include <random>
#include <thread>

#include "server/json_input.h"
#include "server_fixture.h"
#include "text/utf8.h"

namespace gs {
namespace {

using nlohmann::json;
using test::expect_healthy;
using test::LiveServer;
using test::ServerFixtureOptions;
using namespace std::chrono_literals;

void expect_error_body(const httplib::Result& res, int status, const std::string& context) {
  ASSERT_TRUE(res) << context;
  EXPECT_EQ(res->status, status) << context << ": " << res->body;
  json j = json::parse(res->body, nullptr, false);
  ASSERT_TRUE(j.is_object()) << context << ": " << res->body;
  ASSERT_TRUE(j.contains("error")) << context << ": " << res->body;
  EXPECT_TRUE(j["error"]["message"].is_string()) << context;
  EXPECT_FALSE(j["error"]["message"].get<std::string>().empty()) << context;
  EXPECT_TRUE(j["error"]["type"].is_string()) << context;
  EXPECT_TRUE(j["error"].contains("code")) << context;
}

TEST(HttpServer, HealthIs503UntilTheModelIsLoaded) {
  ServerFixtureOptions o;
  o.load_model = false;
  LiveServer s(o);
  auto h = s.get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 503);
  EXPECT_EQ(json::parse(h->body)["status"], "loading");
  EXPECT_EQ(h->get_header_value("Retry-After"), "1");
  auto c = s.post("/v1/completions", R"({"prompt":"x"})");
  expect_error_body(c, 503, "completion while loading");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->get_header_value("Retry-After"), "1") << "a 503 while loading says when to retry";
  s.load();
  expect_healthy(s);
}

TEST(HttpServer, ModelsListsTheModel) {
  LiveServer s;
  auto r = s.get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "shakes-test");
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["created"], 1764720000);  // the load time, not 0
  auto one = s.get("/v1/models/shakes-test");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200);
  expect_error_body(s.get("/v1/models/other"), 404, "unknown model");
  expect_error_body(s.get("/v1/models/org/other"), 404, "unknown model with a slash");
}

// A known route with the wrong method is 405 with an Allow header and an OpenAI-style body,
// not 404 (which tells a client the route does not exist).
TEST(HttpServer, WrongMethodIs405WithAllow) {
  LiveServer s;
  auto get_chat = s.get("/v1/chat/completions");
  expect_error_body(get_chat, 405, "GET on a POST route");
  EXPECT_EQ(get_chat->get_header_value("Allow"), "POST");
  auto post_health = s.post("/health", "{}");
  expect_error_body(post_health, 405, "POST on a GET route");
  EXPECT_EQ(post_health->get_header_value("Allow"), "GET");
  auto del = s.client().Delete("/v1/models/shakes-test");
  expect_error_body(del, 405, "DELETE on a model");
  EXPECT_EQ(del->get_header_value("Allow"), "GET");
  expect_error_body(s.get("/v1/nothing"), 404, "unknown route stays 404");
  expect_healthy(s);
}

TEST(HttpServer, CompletionWholeResponse) {
  LiveServer s;
  s.answer("Good morrow, sir.");
  auto r = s.post("/v1/completions", R"({"prompt":"ROMEO:","max_tokens":50})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "Good morrow, sir.");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["prompt_tokens"], static_cast<int>(s.tok->encode("ROMEO:", true, true).size()));
  EXPECT_GT(j["usage"]["completion_tokens"].get<int>(), 0);
  EXPECT_EQ(j["usage"]["total_tokens"].get<int>(),
            j["usage"]["prompt_tokens"].get<int>() + j["usage"]["completion_tokens"].get<int>());
}

TEST(HttpServer, CompletionLengthStopStringsEchoAndTokenPrompt) {
  LiveServer s;
  s.answer("one two three four five six");
  json j = json::parse(s.post("/v1/completions", R"({"prompt":"x","max_tokens":2})")->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  j = json::parse(s.post("/v1/completions", R"({"prompt":"x","max_tokens":50,"stop":["thr"]})")->body);
  EXPECT_EQ(j["choices"][0]["text"], "one two ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  j = json::parse(s.post("/v1/completions", R"({"prompt":"Hark","max_tokens":50,"echo":true})")->body);
  EXPECT_EQ(j["choices"][0]["text"], "Harkone two three four five six");
  const auto ids = s.tok->encode("ROMEO:", true, true);
  json body{{"prompt", ids}, {"max_tokens", 3}};
  j = json::parse(s.post("/v1/completions", body.dump())->body);
  EXPECT_EQ(j["usage"]["prompt_tokens"], static_cast<int>(ids.size()));
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
}

// logprobs.text_offset counts characters (code points) of the text shown, and a streamed
// response gives the same offsets as a whole one. Echo with logprobs asks for the prompt's
// own logprobs, which the engine does not compute: refused with a 400, not answered with the
// generated tokens' logprobs under the prompt's text.
TEST(HttpServer, CompletionTextOffsetsCountCharacters) {
  LiveServer s;
  s.answer("é日本 ok 😊!");
  const std::string prompt = "日本 ROMEO:";
  json body{{"prompt", prompt}, {"max_tokens", 8}, {"echo", true}, {"logprobs", 0}};
  auto refused = s.post("/v1/completions", body.dump());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  EXPECT_NE(refused->body.find("echo"), std::string::npos) << refused->body;
  body.erase("echo");
  json whole = json::parse(s.post("/v1/completions", body.dump())->body);
  const json& offsets = whole["choices"][0]["logprobs"]["text_offset"];
  ASSERT_TRUE(offsets.is_array());
  ASSERT_GE(offsets.size(), 2u);
  EXPECT_EQ(offsets[0], 0);
  // Each offset is the character count of the text before the token.
  const std::u32string shown = [&] {
    std::u32string out;
    const std::string t = whole["choices"][0]["text"];
    for (size_t i = 0; i < t.size();) {
      const unsigned char c = static_cast<unsigned char>(t[i]);
      const int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      out.push_back(c);
      i += n;
    }
    return out;
  }();
  for (const auto& o : offsets) EXPECT_LE(o.get<size_t>(), shown.size());
  body["stream"] = true;
  auto r = s.post("/v1/completions", body.dump());
  ASSERT_TRUE(r);
  json streamed = json::array();
  for (const std::string& e : test::sse_payloads(r->body)) {
    if (e == "[DONE]") continue;
    json j = json::parse(e, nullptr, false);
    if (!j.is_object() || !j.contains("choices") || j["choices"].empty()) continue;
    const json& lp = j["choices"][0]["logprobs"];
    if (lp.is_object())
      for (const auto& o : lp["text_offset"]) streamed.push_back(o);
  }
  EXPECT_EQ(streamed, offsets);
}

// A stop string ends the answer at the token that completes it: usage counts exactly the
// tokens the answer is made of (one logprobs entry each), not the rest of a verified draft
// round or a step that ran before the cancel landed.
TEST(HttpServer, StopStringUsageCountsOnlyTheTokensShown) {
  ServerFixtureOptions o;
  o.has_drafter = true;  // three tokens per round: the stop lands mid-round
  LiveServer s(o);
  s.answer("one two three four five six seven eight nine ten");
  const auto ids = s.tok->encode("one two three four five six seven eight nine ten", false, true);
  size_t n_shown = 0;  // tokens up to the one that completes "two"
  while (n_shown < ids.size()) {
    ++n_shown;
    auto text = s.tok->decode(std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n_shown)));
    ASSERT_TRUE(text.ok());
    if (text->find("two") != std::string::npos) break;
  }
  const std::string req = R"({"prompt":"x","max_tokens":50,"stop":["two"],"logprobs":0)";
  json j = json::parse(s.post("/v1/completions", req + "}")->body);
  EXPECT_EQ(j["choices"][0]["text"], "one ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"].size(), n_shown);
  EXPECT_EQ(j["usage"]["completion_tokens"], static_cast<int>(n_shown));
  EXPECT_EQ(j["usage"]["total_tokens"].get<int>(),
            j["usage"]["prompt_tokens"].get<int>() + static_cast<int>(n_shown));

  auto r = s.post("/v1/completions", req + R"(,"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_TRUE(r);
  auto events = test::sse_payloads(r->body);
  ASSERT_GE(events.size(), 2u);
  json usage = json::parse(events[events.size() - 2]);
  EXPECT_EQ(usage["usage"]["completion_tokens"], static_cast<int>(n_shown));
}

// The logprobs of a completion that a stop string ended describe exactly the text returned
// (decision 0053): the tokens spell it, text_offset counts its characters, and the token that
// completed the stop string (or any token of it) is not listed; a token the stop string begins
// inside is listed cut to its part before it. Streamed, each chunk's entries spell text
// already sent, and all of them spell the whole text. Before, the token that completed the
// stop string was listed with the text cut from the answer.
TEST(HttpServer, CompletionLogprobsSpellExactlyTheTextAStopStringLeft) {
  LiveServer s;
  s.answer("one two three four five six");
  // Stops at a token's start, inside a token, and inside a token's first character.
  for (const char* stop : {" three", "hre", "thr", "e f", "one"}) {
    json body{{"prompt", "x"}, {"max_tokens", 50}, {"stop", {stop}}, {"logprobs", 1}};
    const json whole = json::parse(s.post("/v1/completions", body.dump())->body);
    const std::string text = whole["choices"][0]["text"];
    EXPECT_EQ(text, std::string("one two three four five six").substr(0, std::string("one two three four five six").find(stop)));
    const json& lp = whole["choices"][0]["logprobs"];
    std::string spelled;
    ASSERT_EQ(lp["tokens"].size(), lp["text_offset"].size()) << stop;
    ASSERT_EQ(lp["tokens"].size(), lp["token_logprobs"].size()) << stop;
    ASSERT_EQ(lp["tokens"].size(), lp["top_logprobs"].size()) << stop;
    for (size_t i = 0; i < lp["tokens"].size(); ++i) {
      EXPECT_EQ(lp["text_offset"][i], spelled.size()) << stop;  // ASCII: characters are bytes
      spelled += lp["tokens"][i].get<std::string>();
    }
    EXPECT_EQ(spelled, text) << stop << ": " << lp.dump();

    body["stream"] = true;
    auto r = s.post("/v1/completions", body.dump());
    ASSERT_TRUE(r);
    std::string sent, streamed;
    json offsets = json::array();
    for (const std::string& e : test::sse_payloads(r->body)) {
      if (e == "[DONE]") continue;
      const json j = json::parse(e);
      if (j["choices"].empty()) continue;
      sent += j["choices"][0]["text"].get<std::string>();
      const json& l = j["choices"][0]["logprobs"];
      if (!l.is_object()) continue;
      for (const auto& t : l["tokens"]) streamed += t.get<std::string>();
      for (const auto& o : l["text_offset"]) offsets.push_back(o);
      EXPECT_EQ(sent.compare(0, streamed.size(), streamed), 0) << stop << ": entries ahead of the text: " << streamed;
    }
    EXPECT_EQ(sent, text) << stop;
    EXPECT_EQ(streamed, text) << stop;
    EXPECT_EQ(offsets, lp["text_offset"]) << stop;
  }
}

TEST(HttpServer, CompletionStreamEventsAndUsageChunk) {
  LiveServer s;
  s.answer("To be, or not to be");
  auto r = s.post("/v1/completions",
                  R"({"prompt":"x","max_tokens":50,"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  auto events = test::sse_payloads(r->body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  std::string finish;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    json c = json::parse(events[i]);
    EXPECT_EQ(c["object"], "text_completion");
    // include_usage: "usage": null before the usage chunk (OpenAI's shape).
    EXPECT_TRUE(c.contains("usage") && c["usage"].is_null()) << events[i];
    text += c["choices"][0]["text"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, "To be, or not to be");
  EXPECT_EQ(finish, "stop");
  json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_GT(usage["usage"]["completion_tokens"].get<int>(), 0);
}

// vLLM's stream_options.continuous_usage_stats was ignored: with include_usage each chunk
// before the usage chunk said "usage": null. As vLLM, with both each chunk carries the usage so
// far (its choice's completion tokens, rising to the final count at the finish chunk); without
// include_usage the field asks for nothing; it is a boolean (a 400 naming it otherwise).
TEST(HttpServer, ContinuousUsageStatsPutTheUsageSoFarInEveryChunk) {
  LiveServer s;
  s.answer("To be, or not to be");
  const std::string chat_head = R"({"messages":[{"role":"user","content":"x"}],"max_tokens":50,"stream":true,)";
  const std::string completion_head = R"({"prompt":"x","max_tokens":50,"stream":true,)";
  for (const auto& [path, head] : {std::pair<std::string, std::string>{"/v1/completions", completion_head},
                                   std::pair<std::string, std::string>{"/v1/chat/completions", chat_head}}) {
    SCOPED_TRACE(path);
    auto r = s.post(path, head + R"("stream_options":{"include_usage":true,"continuous_usage_stats":true}})");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const auto events = test::sse_payloads(r->body);
    ASSERT_GE(events.size(), 4u);
    EXPECT_EQ(events.back(), "[DONE]");
    const json last = json::parse(events[events.size() - 2]);
    ASSERT_TRUE(last["choices"].empty()) << events[events.size() - 2];
    const int prompt_tokens = last["usage"]["prompt_tokens"].get<int>();
    const int completion_tokens = last["usage"]["completion_tokens"].get<int>();
    EXPECT_GT(completion_tokens, 0);
    int previous = 0;
    for (size_t i = 0; i + 2 < events.size(); ++i) {
      const json c = json::parse(events[i]);
      ASSERT_TRUE(c["usage"].is_object()) << events[i];
      EXPECT_EQ(c["usage"]["prompt_tokens"], prompt_tokens) << events[i];
      const int n = c["usage"]["completion_tokens"].get<int>();
      EXPECT_GE(n, previous) << events[i];
      EXPECT_EQ(c["usage"]["total_tokens"].get<int>(), prompt_tokens + n) << events[i];
      previous = n;
      if (!c["choices"][0]["finish_reason"].is_null()) {
        EXPECT_EQ(n, completion_tokens) << events[i];
      }
    }
    EXPECT_EQ(previous, completion_tokens);
    // Without include_usage: no usage anywhere, as vLLM.
    r = s.post(path, head + R"("stream_options":{"continuous_usage_stats":true}})");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    for (const auto& e : test::sse_payloads(r->body)) EXPECT_EQ(e.find("usage"), std::string::npos) << e;
    // A boolean.
    r = s.post(path, head + R"("stream_options":{"include_usage":true,"continuous_usage_stats":"yes"}})");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(json::parse(r->body)["error"]["param"], "stream_options.continuous_usage_stats") << r->body;
  }
}

// Bug-cases 27 and 58: multi-byte characters built from byte tokens are never split or
// replaced, streamed or not, wherever max_tokens cuts.
TEST(HttpServer, Utf8IsNeverSplitAndTruncationDropsPartialCharacters) {
  LiveServer s;
  const std::string answer = "ok \xF0\x9F\x8C\x8D\xF0\x9F\x8E\x89 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E";  // ok 🌍🎉 日本語
  s.answer(answer);
  const size_t n_answer_tokens = s.tok->encode(answer, false, true).size();
  json whole = json::parse(s.post("/v1/completions", R"({"prompt":"x","max_tokens":100})")->body);
  EXPECT_EQ(whole["choices"][0]["text"], answer);
  auto streamed = s.post("/v1/completions", R"({"prompt":"x","max_tokens":100,"stream":true})");
  std::string text;
  for (const auto& e : test::sse_payloads(streamed->body)) {
    if (e == "[DONE]") continue;
    const std::string piece = json::parse(e)["choices"][0]["text"];
    EXPECT_TRUE(text::is_valid_utf8(piece));
    text += piece;
  }
  EXPECT_EQ(text, answer);
  EXPECT_EQ(text.find(text::kReplacementChar), std::string::npos);
  for (size_t n = 1; n <= n_answer_tokens; ++n) {
    for (bool stream : {false, true}) {
      json body{{"prompt", "x"}, {"max_tokens", n}, {"stream", stream}};
      auto r = s.post("/v1/completions", body.dump());
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200);
      std::string got;
      std::string finish;
      if (stream) {
        for (const auto& e : test::sse_payloads(r->body)) {
          if (e == "[DONE]") continue;
          json c = json::parse(e);
          got += c["choices"][0]["text"].get<std::string>();
          if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
        }
      } else {
        json c = json::parse(r->body);
        got = c["choices"][0]["text"];
        finish = c["choices"][0]["finish_reason"];
      }
      EXPECT_TRUE(text::is_valid_utf8(got)) << n;
      EXPECT_EQ(got.find(text::kReplacementChar), std::string::npos) << n;
      EXPECT_EQ(answer.rfind(got, 0), 0u) << "max_tokens " << n << " gave a text that is not a prefix";
      EXPECT_EQ(finish, "length") << n;
    }
  }
}

TEST(HttpServer, ApiKeysGuardEveryRouteButHealth) {
  ServerFixtureOptions o;
  o.keys = {"sk-test-1", "sk-test-2"};
  LiveServer s(o);
  s.answer("hi");
  expect_healthy(s);
  expect_error_body(s.get("/v1/models"), 401, "no key");
  expect_error_body(s.get("/metrics"), 401, "metrics without key");
  expect_error_body(s.post("/v1/completions", R"({"prompt":"x"})"), 401, "no key");
  expect_error_body(s.post("/v1/completions", R"({"prompt":"x"})", {{"Authorization", "Bearer sk-wrong"}}), 401,
                    "wrong key");
  auto e = s.post("/v1/completions", R"({"prompt":"x"})", {{"Authorization", "Bearer sk-wrong"}});
  EXPECT_EQ(json::parse(e->body)["error"]["type"], "authentication_error");
  auto ok1 = s.post("/v1/completions", R"({"prompt":"x"})", {{"Authorization", "Bearer sk-test-1"}});
  ASSERT_TRUE(ok1);
  EXPECT_EQ(ok1->status, 200);
  auto ok2 = s.get("/v1/models", {{"x-api-key", "sk-test-2"}});
  ASSERT_TRUE(ok2);
  EXPECT_EQ(ok2->status, 200);
}

// /v1/health is /health under the API's prefix: a probe pointed at it got 401 while the
// same probe at /health got 200.
TEST(HttpServer, HealthAliasNeedsNoKeyEither) {
  ServerFixtureOptions o;
  o.keys = {"sk-test-1"};
  LiveServer s(o);
  for (const char* path : {"/health", "/v1/health"}) {
    auto h = s.get(path);
    ASSERT_TRUE(h) << path;
    EXPECT_EQ(h->status, 200) << path << ": " << h->body;
  }
}

// Bug-case 56 and friends over HTTP: 4xx with an OpenAI error body, and the server goes on.
TEST(HttpServer, BadInputGetsAClearErrorAndTheServerKeepsServing) {
  ServerFixtureOptions o;
  o.max_body_bytes = 64 * 1024;
  LiveServer s(o);
  s.answer("fine");
  const std::vector<std::string> bad_chat = {
      "", "{}", "[]", "5", "\"x\"", "null", "{:", R"({"messages":"hi"})", R"({"messages":[]})",
      R"({"messages":[{"role":"user"}]})", R"({"messages":[{"role":"user","content":42}]})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":"ten"})",
      R"({"messages":[{"role":"user","content":"hi"}],"stop":{"a":1}})",
      R"({"messages":[{"role":"user","content":"hi"}],"tools":"x"})",
      R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"nope"}}})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":-1})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":99999999999999999999999})",
      R"({"messages":[{"role":"user","content":"hi"}],"temperature":1e308})",
      R"({"messages":[{"role":"alien","content":"hi"}]})",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"\xC3\x28\"}]}",
      "{\"a\":" + std::string(10000, '[') + std::string(10000, ']') + "}",
  };
  for (const auto& body : bad_chat) {
    auto r = s.post("/v1/chat/completions", body);
    expect_error_body(r, 400, "chat body: " + body.substr(0, 80));
    if (r) {
      EXPECT_EQ(json::parse(r->body)["error"]["type"], "invalid_request_error");
    }
  }
  for (const auto& body : {std::string("{}"), std::string(R"({"prompt":42})"), std::string(R"({"prompt":[1,-2]})"),
                           std::string(R"({"prompt":"x","max_tokens":0})")}) {
    expect_error_body(s.post("/v1/completions", body), 400, "completion body: " + body);
  }
  // Oversized body -> 413 with an error body.
  expect_error_body(s.post("/v1/completions", "{\"prompt\":\"" + std::string(100 * 1024, 'a') + "\"}"), 413,
                    "oversized");
  expect_error_body(s.get("/v1/nothing-here"), 404, "unknown route");
  expect_healthy(s);
  auto good = s.post("/v1/completions", R"({"prompt":"x","max_tokens":5})");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200);
}

// Mangled bodies (cut anywhere, bytes flipped) never get a 5xx and never stop the server.
TEST(HttpServer, MangledBodiesNeverHurt) {
  LiveServer s;
  s.answer("ok");
  const std::string valid = R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi \u00e9"},)"
                            R"({"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f",)"
                            R"("arguments":"{\"a\":[1,2,{\"b\":null}]}"}}]},{"role":"tool","tool_call_id":"c1","content":"x"}],)"
                            R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],)"
                            R"("max_tokens":4,"stop":["a","b"],"temperature":0.5,"stream":false})";
  ASSERT_EQ(s.post("/v1/chat/completions", valid)->status, 200) << s.post("/v1/chat/completions", valid)->body;
  std::mt19937 rng(1234);
  int n_ok = 0;
  for (int i = 0; i < 300; ++i) {
    std::string body = valid;
    switch (i % 3) {
      case 0:
        body.resize(rng() % body.size());
        break;
      case 1:
        for (int k = 0; k < 3; ++k) body[rng() % body.size()] = static_cast<char>(rng() % 256);
        break;
      default:
        body.insert(rng() % body.size(), std::string(1 + rng() % 4, "[{\"\\:,}]"[rng() % 9]));
        break;
    }
    auto r = s.post("/v1/chat/completions", body);
    ASSERT_TRUE(r) << "no response for body " << i;
    EXPECT_LT(r->status, 500) << body << " -> " << r->body;
    n_ok += r->status == 200 ? 1 : 0;
  }
  EXPECT_LT(n_ok, 300);
  expect_healthy(s);
}

// A slow prefill gets SSE comments so proxies and clients see the connection alive; the
// events around them are unchanged.
TEST(HttpServer, KeepAliveCommentsDuringASlowStep) {
  ServerFixtureOptions o;
  o.step_delay = std::chrono::milliseconds(450);  // the fixture's keep-alive interval is 200 ms
  LiveServer s(o);
  s.answer("slow");
  auto r = s.post("/v1/completions", R"({"prompt":"x","max_tokens":2,"stream":true})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->body.find(": keep-alive\n\n"), std::string::npos) << r->body;
  auto events = test::sse_payloads(r->body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  // A whole response writes nothing until its outcome is known (its status follows it).
  auto whole = s.post("/v1/completions", R"({"prompt":"x","max_tokens":2})");
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->status, 200);
  EXPECT_EQ(whole->body.front(), '{');
  EXPECT_EQ(json::parse(whole->body)["usage"]["completion_tokens"], 2);
}

// Bug-case 44: a prompt that does not fit is refused at once, naming both numbers.
TEST(HttpServer, PromptLongerThanTheContextIs400WithBothNumbers) {
  ServerFixtureOptions o;
  o.n_ctx = 64;
  LiveServer s(o);
  std::string prompt;
  for (int i = 0; i < 100; ++i) prompt += " the king";
  const size_t n = s.tok->encode(prompt, true, true).size();
  auto r = s.post("/v1/completions", json{{"prompt", prompt}}.dump());
  expect_error_body(r, 400, "too long");
  json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["code"], "context_length_exceeded");
  EXPECT_EQ(e["n_ctx"], 64);
  EXPECT_EQ(e["n_prompt_tokens"], static_cast<int>(n));
  EXPECT_NE(e["message"].get<std::string>().find(std::to_string(n)), std::string::npos);
  EXPECT_EQ(e["param"], "prompt");  // the field at fault on this endpoint
  auto c = s.post("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", prompt}}}}}.dump());
  expect_error_body(c, 400, "too long chat");
  EXPECT_EQ(json::parse(c->body)["error"]["param"], "messages");
  EXPECT_EQ(s.runner->n_steps(), 0);
}

// Bug-cases 43 and 41 (context shift): this server shifts no context, so a request whose
// max_tokens runs past the context ends with "length" exactly at the context's end (drafts
// never overshoot it), usage says so, and a request beside it is untouched.
TEST(HttpServer, MaxTokensPastTheContextEndsWithLengthAtTheContext) {
  ServerFixtureOptions o;
  o.n_ctx = 128;
  o.has_drafter = true;
  LiveServer s(o);
  s.answer("la", /*endless=*/true);
  std::string prompt;
  for (int i = 0; i < 45; ++i) prompt += " the king";
  const int n_prompt = static_cast<int>(s.tok->encode(prompt, true, true).size());
  ASSERT_LT(n_prompt, 128);
  json beside;
  std::thread other([&] {
    auto r = s.post("/v1/completions", R"({"prompt":"x","max_tokens":7})");
    if (r) beside = json::parse(r->body, nullptr, false);
  });
  for (const bool stream : {false, true}) {
    json body{{"prompt", prompt}, {"max_tokens", 512}, {"stream", stream}, {"stream_options", {{"include_usage", true}}}};
    if (!stream) body.erase("stream_options");
    auto r = s.post("/v1/completions", body.dump());
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    json usage, last_choice;
    if (stream) {
      auto events = test::sse_payloads(r->body);
      ASSERT_GE(events.size(), 3u);
      usage = json::parse(events[events.size() - 2])["usage"];
      last_choice = json::parse(events[events.size() - 3])["choices"][0];
    } else {
      json j = json::parse(r->body);
      usage = j["usage"];
      last_choice = j["choices"][0];
    }
    EXPECT_EQ(last_choice["finish_reason"], "length") << "stream " << stream;
    EXPECT_EQ(usage["prompt_tokens"], n_prompt);
    EXPECT_EQ(usage["completion_tokens"], 128 - n_prompt) << "stream " << stream;
    EXPECT_EQ(usage["total_tokens"], 128);
  }
  other.join();
  ASSERT_TRUE(beside.is_object());
  EXPECT_EQ(beside["usage"]["completion_tokens"], 7);
  EXPECT_EQ(beside["choices"][0]["finish_reason"], "length");
  expect_healthy(s);
}

TEST(HttpServer, QueueFullIs429) {
  ServerFixtureOptions o;
  o.n_slots = 1;
  o.queue_size = 0;
  o.step_delay = 5ms;
  LiveServer s(o);
  s.answer("", /*endless=*/true);
  std::thread holder([&] { s.post("/v1/completions", R"({"prompt":"x","max_tokens":400})"); });
  for (int i = 0; i < 200 && s.engine->metrics().busy_slots == 0; ++i) std::this_thread::sleep_for(5ms);
  auto r = s.post("/v1/completions", R"({"prompt":"x","max_tokens":3})");
  expect_error_body(r, 429, "queue full");
  holder.join();
  expect_healthy(s);
}

// A raw socket that has sent a completion request with `body`, or -1.
int send_completion_request(int port, const std::string& body, const std::string& extra_headers) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  const std::string req = "POST " + std::string("/v1/completions") +
                          " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_headers + "Content-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  return fd;
}

// Polls the engine's metrics until a slot holds a request (at most 2.5 s; the caller asserts).
void wait_for_busy_slot(LiveServer& s) {
  for (int i = 0; i < 500 && s.engine->metrics().busy_slots < 1; ++i) std::this_thread::sleep_for(5ms);
}

// Polls the engine's metrics until a request waits in the queue (at most 1 s; the caller asserts).
void wait_for_queued(LiveServer& s) {
  for (int i = 0; i < 200 && s.engine->metrics().queue_length < 1; ++i) std::this_thread::sleep_for(5ms);
}

// A raw socket that sends a request, reads until `marker` shows up, then closes.
std::string read_until_then_close(int port, const std::string& body, const std::string& marker,
                                  const std::string& extra_headers = "") {
  const int fd = send_completion_request(port, body, extra_headers);
  if (fd < 0) return "";
  std::string got;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (got.find(marker) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return got;
}

// A raw socket that sends a request, waits until the engine has generated tokens for it
// (past `generated_before`), then closes; returns what arrived meanwhile, or "-" when the
// engine generated nothing within 10 s.
std::string close_once_generating(LiveServer& s, const std::string& body, const std::string& extra_headers = "") {
  const uint64_t generated_before = s.engine->metrics().generated_tokens_total;
  const int fd = send_completion_request(s.http->port(), body, extra_headers);
  if (fd < 0) return "-";
  bool generating = false;
  for (int i = 0; i < 1000 && !generating; ++i) {
    generating = s.engine->metrics().generated_tokens_total > generated_before + 3;
    if (!generating) std::this_thread::sleep_for(10ms);
  }
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0;) got.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return generating ? got : "-";
}

// Waits up to 4 s for the engine to count a cancellation past `cancelled_before` and to have
// no busy slot; true when it did.
bool wait_cancelled_and_idle(LiveServer& s, uint64_t cancelled_before) {
  for (int i = 0; i < 400; ++i) {
    const EngineMetrics m = s.engine->metrics();
    if (m.requests_cancelled_total > cancelled_before && m.busy_slots == 0) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Bug-cases 37/38: a client that goes away frees its slot; the next request is served.
TEST(HttpServer, ClientDisconnectCancelsTheRequest) {
  ServerFixtureOptions o;
  o.n_slots = 1;
  o.queue_size = 0;
  o.n_ctx = 1 << 20;
  o.step_delay = 2ms;
  o.has_drafter = true;
  LiveServer s(o);
  s.answer("", /*endless=*/true);
  for (bool stream : {true, false}) {
    const uint64_t cancelled_before = s.engine->metrics().requests_cancelled_total;
    json body{{"prompt", "x"}, {"max_tokens", 100000}, {"stream", stream}};
    // Streamed: wait for content; whole: wait for generation (nothing is written before
    // the outcome, whose status it is).
    if (stream) {
      ASSERT_FALSE(read_until_then_close(s.http->port(), body.dump(), "\"text\"").empty());
    } else {
      EXPECT_EQ(close_once_generating(s, body.dump()), "");
    }
    const bool freed = wait_cancelled_and_idle(s, cancelled_before);
    EXPECT_TRUE(freed) << (stream ? "stream" : "whole") << ": the slot was not freed";
    s.answer("next");
    auto r = s.post("/v1/completions", R"({"prompt":"x","max_tokens":5})");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    s.answer("", true);
  }
  EXPECT_GE(s.http->counters().client_disconnects, 2u);
}

// The same for a client that accepts compressed answers, as the openai Python client (httpx)
// says by default: httplib gzipped the whole response, the keep-alive spaces (written then
// while a whole response waited) went into the compressor and never reached the socket, so
// a client gone was never noticed and its slot generated on to max_tokens. Answers are sent
// uncompressed (httplib also ignored q=0), and a waiting whole response watches the socket.
TEST(HttpServer, ClientDisconnectCancelsACompressibleRequest) {
  ServerFixtureOptions o;
  o.n_slots = 1;
  o.queue_size = 0;
  o.n_ctx = 1 << 20;
  o.step_delay = 2ms;
  LiveServer s(o);
  s.answer("", /*endless=*/true);
  for (const char* encoding : {"gzip, deflate", "br", "gzip;q=0"}) {
    const uint64_t cancelled_before = s.engine->metrics().requests_cancelled_total;
    json body{{"prompt", "x"}, {"max_tokens", 100000}};
    const std::string got = close_once_generating(s, body.dump(), std::string("Accept-Encoding: ") + encoding + "\r\n");
    EXPECT_EQ(got, "") << encoding << ": " << got.substr(0, 300);
    const bool freed = wait_cancelled_and_idle(s, cancelled_before);
    ASSERT_TRUE(freed) << encoding << ": the slot was not freed";
  }
  s.answer("fine");
  auto r = s.post("/v1/completions", R"({"prompt":"x","max_tokens":5})", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(r->has_header("Content-Encoding"));
  EXPECT_TRUE(json::accept(r->body)) << r->body;
}

// A connection reset (an RST: the client's socket closed with SO_LINGER 0, or closed with
// unread bytes) cancels at once, whole or streamed, without waiting for the half-close probe.
TEST(HttpServer, AResetConnectionCancelsAtOnce) {
  ServerFixtureOptions o;
  o.n_slots = 1;
  o.queue_size = 0;
  o.n_ctx = 1 << 20;
  o.step_delay = 2ms;
  LiveServer s(o);
  s.answer("", /*endless=*/true);
  for (bool stream : {false, true}) {
    const uint64_t cancelled_before = s.engine->metrics().requests_cancelled_total;
    const uint64_t generated_before = s.engine->metrics().generated_tokens_total;
    json body{{"prompt", "x"}, {"max_tokens", 100000}, {"stream", stream}};
    const int fd = send_completion_request(s.http->port(), body.dump(), "");
    ASSERT_GE(fd, 0);
    for (int i = 0; i < 1000 && s.engine->metrics().generated_tokens_total <= generated_before + 3; ++i) {
      std::this_thread::sleep_for(5ms);
    }
    const linger reset{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    const auto t0 = std::chrono::steady_clock::now();
    ::close(fd);
    EXPECT_TRUE(wait_cancelled_and_idle(s, cancelled_before)) << (stream ? "stream" : "whole");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 900ms) << (stream ? "stream" : "whole");
  }
}

// A stream's headers commit it to 200, so they wait until a slot holds the request: a
// queued stream has received nothing, then streams once admitted; a queued stream whose
// client goes away meanwhile is cancelled and leaves the queue.
TEST(HttpServer, AQueuedStreamIsCommittedOnceASlotHoldsIt) {
  ServerFixtureOptions o;
  o.n_slots = 1;
  o.step_delay = 5ms;
  LiveServer s(o);
  s.answer("la", /*endless=*/true);
  std::thread holder([&] { s.post("/v1/completions", R"({"prompt":"x","max_tokens":120})"); });
  wait_for_busy_slot(s);
  ASSERT_EQ(s.engine->metrics().busy_slots, 1);
  const int fd = send_completion_request(s.http->port(), R"({"prompt":"x","max_tokens":3,"stream":true})", "");
  ASSERT_GE(fd, 0);
  wait_for_queued(s);
  ASSERT_EQ(s.engine->metrics().queue_length, 1);
  std::this_thread::sleep_for(100ms);
  char buf[4096];
  EXPECT_LT(::recv(fd, buf, sizeof buf, MSG_DONTWAIT), 0) << "the queued stream was answered before a slot held it";
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (got.find("data: [DONE]") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  holder.join();
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got.substr(0, 200);
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos) << got.substr(0, 400);

  // Gone while queued (closed: seen once the half-close probe's 100 Continue is reset).
  std::thread holder2([&] { s.post("/v1/completions", R"({"prompt":"x","max_tokens":400})"); });
  wait_for_busy_slot(s);
  const uint64_t cancelled_before = s.engine->metrics().requests_cancelled_total;
  const uint64_t gone_before = s.http->counters().client_disconnects;
  const int fd2 = send_completion_request(s.http->port(), R"({"prompt":"x","max_tokens":3,"stream":true})", "");
  ASSERT_GE(fd2, 0);
  wait_for_queued(s);
  ASSERT_EQ(s.engine->metrics().queue_length, 1);
  ::close(fd2);
  bool left = false;
  for (int i = 0; i < 400 && !left; ++i) {
    left = s.engine->metrics().queue_length == 0 && s.engine->metrics().requests_cancelled_total > cancelled_before;
    if (!left) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(left) << "the queued stream of a client gone stayed in the queue";
  EXPECT_GT(s.http->counters().client_disconnects, gone_before);
  EXPECT_EQ(s.engine->metrics().busy_slots, 1) << "the running request was touched";
  holder2.join();
  expect_healthy(s);
}

// A stream still queued after stream_commit_wait is committed anyway (200, then keep-alive
// comments while it waits), so that a proxy in front does not cut a silent connection; its
// tokens follow once a slot holds it.
TEST(HttpServer, AStreamQueuedLongIsCommittedWithKeepAlives) {
  ServerFixtureOptions o;
  o.n_slots = 1;
  o.step_delay = 5ms;
  o.stream_commit_wait = 300ms;
  LiveServer s(o);
  s.answer("la", /*endless=*/true);
  std::thread holder([&] { s.post("/v1/completions", R"({"prompt":"x","max_tokens":250})"); });
  wait_for_busy_slot(s);
  ASSERT_EQ(s.engine->metrics().busy_slots, 1);
  const int fd = send_completion_request(s.http->port(), R"({"prompt":"x","max_tokens":3,"stream":true})", "");
  ASSERT_GE(fd, 0);
  std::string got;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + 1s;  // the holder runs ~1.25 s
  while (got.find(": keep-alive") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) got.append(buf, static_cast<size_t>(n));
    else std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(s.engine->metrics().queue_length, 1) << "the stream left the queue before the check";
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got.substr(0, 200);
  EXPECT_NE(got.find(": keep-alive"), std::string::npos) << got.substr(0, 400);
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (got.find("data: [DONE]") == std::string::npos && std::chrono::steady_clock::now() < end) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  holder.join();
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos) << got.substr(0, 400);
  expect_healthy(s);
}

// `serve` with a file that fails at once stopped the listener before its thread had started
// listening: the stop was lost, the listener served on and the process never exited.
// The engine shutting down under running requests (the end of the drain after SIGTERM):
// a stream ends with an error event and [DONE], a whole response with an error body; both
// were cut off mid-response.
TEST(HttpServer, EngineShutdownEndsRunningResponsesWithAnError) {
  ServerFixtureOptions o;
  o.step_delay = 2ms;
  LiveServer s(o);
  s.answer("la", /*endless=*/true);
  std::string streamed, whole;
  int streamed_status = 0, whole_status = 0;
  std::thread t1([&] {
    auto r = s.post("/v1/completions", R"({"prompt":"x","max_tokens":100000,"stream":true})");
    if (r) streamed = r->body, streamed_status = r->status;
  });
  std::thread t2([&] {
    auto r = s.post("/v1/completions", R"({"prompt":"x","max_tokens":100000})");
    if (r) whole = r->body, whole_status = r->status;
  });
  for (int i = 0; i < 200 && s.engine->metrics().busy_slots < 2; ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(50ms);
  s.engine->shutdown();
  t1.join();
  t2.join();
  auto events = test::sse_payloads(streamed);
  ASSERT_GE(events.size(), 2u) << streamed.substr(0, 200);
  EXPECT_EQ(events.back(), "[DONE]");
  json err = json::parse(events[events.size() - 2], nullptr, false);
  EXPECT_TRUE(err.contains("error")) << events[events.size() - 2];
  EXPECT_EQ(streamed_status, 200);  // committed with the first event
  json w = json::parse(whole, nullptr, false);
  ASSERT_TRUE(w.is_object()) << whole.substr(0, 200);
  EXPECT_TRUE(w.contains("error")) << whole.substr(0, 200);
  EXPECT_EQ(whole_status, 503) << whole.substr(0, 200);
}

// The drain after SIGTERM (HttpServer::set_draining): requests still waiting for a slot get
// their 503 at once with the error body, streamed or not (a stream's headers wait for a slot;
// it was a 200 and an error event); they waited out the whole drain (up to
// --shutdown-timeout) before. A running request is left to finish, and new ones are 503s.
TEST(HttpServer, DrainingEndsQueuedRequestsAtOnceAndLetsRunningOnesFinish) {
  ServerFixtureOptions o;
  o.n_slots = 1;
  o.step_delay = 5ms;
  LiveServer s(o);
  s.answer("la", /*endless=*/true);
  using Clock = std::chrono::steady_clock;
  std::optional<httplib::Result> running, queued_whole, queued_stream;
  Clock::time_point running_end, whole_end, stream_end;
  std::thread t1([&] {
    running.emplace(s.post("/v1/completions", R"({"prompt":"x","max_tokens":400})"));
    running_end = Clock::now();
  });
  wait_for_busy_slot(s);
  ASSERT_EQ(s.engine->metrics().busy_slots, 1);
  std::thread t2([&] {
    queued_whole.emplace(s.post("/v1/chat/completions",
                                R"({"messages":[{"role":"user","content":"x"}],"max_tokens":5})"));
    whole_end = Clock::now();
  });
  std::thread t3([&] {
    queued_stream.emplace(s.post("/v1/completions", R"({"prompt":"x","max_tokens":5,"stream":true})"));
    stream_end = Clock::now();
  });
  for (int i = 0; i < 500 && s.engine->metrics().queue_length < 2; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(s.engine->metrics().queue_length, 2);
  const Clock::time_point drain_start = Clock::now();
  s.http->set_draining();
  expect_error_body(s.post("/v1/completions", R"({"prompt":"x","max_tokens":5})"), 503, "new while draining");
  t2.join();
  t3.join();
  t1.join();
  ASSERT_TRUE(queued_whole && *queued_whole);
  expect_error_body(*queued_whole, 503, "queued whole");
  EXPECT_EQ(json::parse((*queued_whole)->body)["error"]["code"], "unavailable");
  // A queued stream has sent nothing yet (its headers wait for a slot): the same 503 and
  // error body (it was a 200 and an error event, against what the README promises).
  ASSERT_TRUE(queued_stream && *queued_stream);
  expect_error_body(*queued_stream, 503, "queued stream");
  EXPECT_EQ(json::parse((*queued_stream)->body)["error"]["code"], "unavailable");
  EXPECT_EQ((*queued_stream)->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  // At once: well inside the running request's remaining time, not after it.
  EXPECT_LT(whole_end, running_end);
  EXPECT_LT(stream_end, running_end);
  EXPECT_LT(std::chrono::duration<double>(std::max(whole_end, stream_end) - drain_start).count(), 1.0);
  // The running one finished its work.
  ASSERT_TRUE(running && *running);
  EXPECT_EQ((*running)->status, 200) << (*running)->body;
  const json done = json::parse((*running)->body);
  EXPECT_EQ(done["choices"][0]["finish_reason"], "length") << (*running)->body;
  EXPECT_EQ(done["usage"]["completion_tokens"], 400);
}

// An engine failure after a request was admitted (here a model step that fails while it
// generates): a whole response is the error with a 5xx status (it was a 200 with an error
// body, the status sent before the outcome was known); a stream, already 200, ends with an
// error event and [DONE].
TEST(HttpServer, EngineFailureAfterAdmissionIsA5xxForAWholeResponse) {
  ServerFixtureOptions o;
  o.step_delay = 2ms;
  LiveServer s(o);
  s.answer("la", /*endless=*/true);
  struct Case {
    const char* path;
    bool stream;
  };
  for (const Case c : {Case{"/v1/completions", false}, Case{"/v1/chat/completions", false},
                       Case{"/v1/completions", true}, Case{"/v1/chat/completions", true}}) {
    const std::string context = std::string(c.path) + (c.stream ? " streamed" : " whole");
    json body{{"max_tokens", 100000}, {"stream", c.stream}};
    if (std::string(c.path) == "/v1/completions") {
      body["prompt"] = "x";
    } else {
      body["messages"] = json::array({{{"role", "user"}, {"content", "x"}}});
    }
    const uint64_t generated_before = s.engine->metrics().generated_tokens_total;
    std::optional<httplib::Result> r;
    std::thread client([&] { r.emplace(s.post(c.path, body.dump())); });
    for (int i = 0; i < 1000 && s.engine->metrics().generated_tokens_total < generated_before + 3; ++i) {
      std::this_thread::sleep_for(5ms);
    }
    s.runner->fail_next_steps(1);
    client.join();
    ASSERT_TRUE(r && *r) << context;
    if (c.stream) {
      const httplib::Response& res = **r;
      EXPECT_EQ(res.status, 200) << context;
      auto events = test::sse_payloads(res.body);
      ASSERT_GE(events.size(), 2u) << context << ": " << res.body.substr(0, 200);
      EXPECT_EQ(events.back(), "[DONE]") << context;
      json err = json::parse(events[events.size() - 2], nullptr, false);
      ASSERT_TRUE(err.contains("error")) << context << ": " << events[events.size() - 2];
      EXPECT_EQ(err["error"]["type"], "server_error") << context;
    } else {
      expect_error_body(*r, 500, context);
      json err = json::parse((*r)->body)["error"];
      EXPECT_EQ(err["type"], "server_error") << context;
      EXPECT_EQ(err["code"], "internal_error") << context;
      EXPECT_TRUE(err.contains("param")) << context;
      EXPECT_NE(err["message"].get<std::string>().find("fake step failure"), std::string::npos) << context;
    }
  }
  expect_healthy(s);
}

TEST(HttpServer, StopBeforeTheListenerRunsEndsIt) {
  for (int i = 0; i < 20; ++i) {
    server::ServerOptions so;
    so.host = "127.0.0.1";
    so.port = 0;
    auto http = std::make_unique<server::HttpServer>(so);
    ASSERT_TRUE(http->bind().ok());
    std::atomic<bool> returned{false};
    std::thread listener;
    if (i % 2 == 0) {
      http->stop();  // strictly before run()
      listener = std::thread([&] { http->run(); returned = true; });
    } else {
      listener = std::thread([&] { http->run(); returned = true; });
      http->stop();  // races with run() getting started
    }
    for (int k = 0; k < 500 && !returned; ++k) std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(returned) << "run() still serving after stop() (round " << i << ")";
    listener.join();
  }
}

// A browser's CORS preflight is answered (204, no API key needed) and responses let any
// origin read them.
TEST(HttpServer, CorsPreflightAndOrigin) {
  ServerFixtureOptions o;
  o.keys = {"sk-test-1"};
  LiveServer s(o);
  s.answer("fine");
  httplib::Client c("127.0.0.1", s.http->port());
  httplib::Headers h{{"Origin", "http://example.com"}, {"Access-Control-Request-Method", "POST"},
                     {"Access-Control-Request-Headers", "authorization, content-type"}};
  auto r = c.Options("/v1/chat/completions", h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "*");
  EXPECT_NE(r->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Headers"), "authorization, content-type");
  auto m = c.Get("/v1/models", httplib::Headers{{"Authorization", "Bearer sk-test-1"}});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(m->get_header_value("Access-Control-Allow-Origin"), "*");
  auto denied = c.Get("/v1/models");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
}

// Every route answers a CORS preflight (204 with the methods it takes) and another method with
// 405 and Allow. /v1/responses/{id} (GET, POST .../cancel, DELETE: a 404 that says responses
// are not stored) had neither: its preflight was 404 "no such route", so a browser page saw a
// CORS failure instead of the answer, and PUT or PATCH said the route did not exist.
TEST(HttpServer, EveryRouteAnswersAPreflightAndAWrongMethod) {
  LiveServer s;
  httplib::Client c("127.0.0.1", s.http->port());
  struct Route {
    const char* path;
    const char* methods;  // what the preflight allows, OPTIONS aside
    const char* wrong;    // a method it does not take
  };
  const Route routes[] = {
      {"/v1/models", "GET", "PUT"},
      {"/v1/models/x", "GET", "PATCH"},
      {"/v1/chat/completions", "POST", "PUT"},
      {"/v1/responses", "POST", "PATCH"},
      {"/v1/responses/resp_123", "GET, POST, DELETE", "PUT"},
      {"/v1/responses/resp_123/cancel", "GET, POST, DELETE", "PATCH"},
  };
  for (const Route& r : routes) {
    SCOPED_TRACE(r.path);
    auto pre = c.Options(r.path, httplib::Headers{{"Origin", "http://example.com"},
                                                  {"Access-Control-Request-Method", "DELETE"}});
    ASSERT_TRUE(pre);
    EXPECT_EQ(pre->status, 204) << pre->body;
    EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Methods"), std::string(r.methods) + ", OPTIONS");
    EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "*");
    httplib::Request req;
    req.method = r.wrong;
    req.path = r.path;
    auto wrong = c.send(req);
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 405) << wrong->body;
    EXPECT_EQ(wrong->get_header_value("Allow"), r.methods);
  }
  // The route itself still says that nothing is stored.
  auto del = c.Delete("/v1/responses/resp_123");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 404);
  EXPECT_NE(del->body.find("not stored"), std::string::npos) << del->body;
}

// A second server on a port another one listens on must fail to bind (not share the port).
TEST(HttpServer, PortInUseIsAnError) {
  server::ServerOptions so;
  so.host = "127.0.0.1";
  so.port = 0;
  server::HttpServer first(so);
  ASSERT_TRUE(first.bind().ok());
  std::thread listener([&] { first.run(); });
  so.port = first.port();
  server::HttpServer second(so);
  const Status st = second.bind();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("in use"), std::string::npos) << st.to_string();
  first.stop();
  listener.join();
}

// A host that cannot be a listening address says why: "[::1]" is IPv6 in brackets (the
// address is ::1), a name under .invalid (RFC 6761) never resolves. Both said only "cannot
// listen on HOST (any port)".
TEST(HttpServer, UnusableHostSaysWhy) {
  for (int port : {0, 18089}) {
    server::ServerOptions so;
    so.port = port;
    so.host = "[::1]";
    const Status bracketed = server::HttpServer(so).bind();
    EXPECT_FALSE(bracketed.ok());
    EXPECT_NE(bracketed.message().find("without them (::1)"), std::string::npos) << bracketed.to_string();
    so.host = "no-such-host.invalid";
    const Status unknown = server::HttpServer(so).bind();
    EXPECT_FALSE(unknown.ok());
    EXPECT_NE(unknown.message().find("does not resolve"), std::string::npos) << unknown.to_string();
  }
}

TEST(HttpServer, MetricsPageIsValidPrometheusText) {
  ServerFixtureOptions o;
  o.has_drafter = true;
  LiveServer s(o);
  s.answer("a b c d e f g h i j");
  ASSERT_EQ(s.post("/v1/completions", R"({"prompt":"x","max_tokens":20})")->status, 200);
  s.post("/v1/completions", "{");
  // Responses are counted once written, so the last one may lag a moment.
  auto r = s.get("/metrics");
  for (int i = 0; i < 100 && r && r->body.find("code=\"400\"") == std::string::npos; ++i) {
    std::this_thread::sleep_for(10ms);
    r = s.get("/metrics");
  }
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  const std::string& text = r->body;
  EXPECT_NE(text.find("gemmaserve_requests_total 1"), std::string::npos) << text;
  EXPECT_NE(text.find("gemmaserve_draft_position_tokens_total{position=\"1\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("gemmaserve_http_responses_total{code=\"400\"} 1"), std::string::npos) << text;
  const std::string path = ::testing::TempDir() + "/gemmaserve-live-metrics.txt";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  EXPECT_EQ(std::system(("promtool check metrics < " + path + " > /dev/null 2>&1").c_str()), 0) << text;
}

// The default body limit grows with the context, so that a prompt filling a 1M-token context
// fits even with every character escaped as JSON \uXXXX (a client's json.dumps default).
TEST(HttpServer, DefaultBodyLimitFitsAPromptThatFillsTheContext) {
  EXPECT_EQ(server::body_limit_for_context(0), size_t{8} << 20);
  EXPECT_EQ(server::body_limit_for_context(8192), size_t{8} << 20);
  EXPECT_EQ(server::body_limit_for_context(1 << 20), size_t{24} << 20);
  // Escaped CJK text: ~1.5 characters a token, 6 bytes a character.
  const int64_t ctx = 1 << 20;
  EXPECT_GE(server::body_limit_for_context(ctx), static_cast<size_t>(ctx * 3 / 2 * 6 + 4096));
  EXPECT_EQ(server::body_limit_for_context(std::numeric_limits<int32_t>::max()), size_t{1} << 30);
  EXPECT_EQ(server::body_limit_for_context(-5), size_t{8} << 20);
}

}  // namespace
}  // namespace gs

