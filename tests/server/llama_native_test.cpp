// llama-server's native routes (decision 0061) over a live server: POST /completion (its
// prompt forms, stop_type and stopping_word, tokens, n_probs, streamed = whole, fields refused
// by name), GET /props and GET /slots, wrong methods and the API key; and on the real shakes
// model, a greedy /completion is /v1/completions' text.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "server/shakes_http.h"
#include "server_fixture.h"

namespace gs {
namespace {

using nlohmann::json;
using test::LiveServer;
using test::ServerFixtureOptions;

json post_json(const LiveServer& s, const std::string& path, const json& body, int status = 200) {
  auto r = s.post(path, body.dump());
  EXPECT_TRUE(r) << path;
  if (!r) return json();
  EXPECT_EQ(r->status, status) << path << " " << body.dump().substr(0, 200) << " -> " << r->body.substr(0, 400);
  return json::parse(r->body, nullptr, false);
}

// The chunks of a streamed /completion, parsed.
std::vector<json> stream_chunks(const LiveServer& s, const json& body) {
  json b = body;
  b["stream"] = true;
  auto r = s.post("/completion", b.dump());
  EXPECT_TRUE(r);
  if (!r) return {};
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  std::vector<json> out;
  for (const std::string& p : test::sse_payloads(r->body)) {
    EXPECT_NE(p, "[DONE]") << "llama-server's native stream has no [DONE]";
    out.push_back(json::parse(p, nullptr, false));
  }
  return out;
}

void expect_refused(const LiveServer& s, const json& body, const std::string& param) {
  auto r = s.post("/completion", body.dump());
  ASSERT_TRUE(r) << param;
  EXPECT_EQ(r->status, 400) << body.dump() << " -> " << r->body;
  const json j = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
  EXPECT_EQ(j["error"]["type"], "invalid_request_error") << r->body;
  EXPECT_EQ(j["error"]["param"], param) << body.dump() << " -> " << r->body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find(param), std::string::npos) << r->body;
}

TEST(LlamaCompletion, WholeAnswerInLlamaServersShape) {
  LiveServer s;
  s.answer("Hello there");
  const json j = post_json(s, "/completion", {{"prompt", "Say hi"}, {"n_predict", 32}});
  EXPECT_EQ(j["content"], "Hello there");
  EXPECT_EQ(j["stop"], true);
  EXPECT_EQ(j["stop_type"], "eos");
  EXPECT_EQ(j["stopping_word"], "");
  EXPECT_EQ(j["model"], "shakes-test");
  EXPECT_EQ(j["index"], 0);
  EXPECT_EQ(j["truncated"], false);
  EXPECT_EQ(j["has_new_line"], false);
  EXPECT_EQ(j["tokens"], json::array()) << "no return_tokens: tokens stays empty";
  EXPECT_FALSE(j.contains("completion_probabilities"));
  const std::vector<int32_t> prompt = s.tok->encode("Say hi", true, true);
  EXPECT_EQ(j["tokens_evaluated"], prompt.size());
  EXPECT_EQ(j["tokens_predicted"], s.tok->encode("Hello there", false, true).size() + 1);  // the end token counts
  EXPECT_EQ(j["prompt"], "<bos>Say hi");
  EXPECT_TRUE(j["timings"].contains("prompt_n"));
  EXPECT_TRUE(j["timings"].contains("predicted_n"));
  EXPECT_TRUE(j["timings"].contains("cache_n"));
  const json& gs = j["generation_settings"];
  EXPECT_EQ(gs["n_predict"], 32);
  EXPECT_EQ(gs["temperature"], 0.0);
  EXPECT_EQ(gs["stream"], false);
  EXPECT_EQ(gs["seed"], -1);
  EXPECT_EQ(gs["samplers"], json::array({"penalties", "top_k", "top_p", "min_p", "temperature"}));
  // The same text as /v1/completions gives.
  const json oa = post_json(s, "/v1/completions", {{"prompt", "Say hi"}, {"max_tokens", 32}});
  EXPECT_EQ(oa["choices"][0]["text"], j["content"]);
}

TEST(LlamaCompletion, NPredictLimitsAndDefaultsToTheServersCap) {
  LiveServer s;
  s.answer("", /*endless=*/true);
  json j = post_json(s, "/completion", {{"prompt", "x"}, {"n_predict", 5}});
  EXPECT_EQ(j["stop_type"], "limit");
  EXPECT_EQ(j["tokens_predicted"], 5);
  EXPECT_EQ(j["content"], " la la la la la");
  // max_tokens is n_predict by its other name, as llama-server reads it.
  j = post_json(s, "/completion", {{"prompt", "x"}, {"max_tokens", 3}});
  EXPECT_EQ(j["tokens_predicted"], 3);
  // No limit given, or -1: the server's (--default-max-tokens, 4096 here), not /v1/completions' 16.
  s.answer("short answer");
  j = post_json(s, "/completion", {{"prompt", "x"}});
  EXPECT_EQ(j["content"], "short answer");
  EXPECT_EQ(j["generation_settings"]["n_predict"], 4096);
  j = post_json(s, "/completion", {{"prompt", "x"}, {"n_predict", -1}});
  EXPECT_EQ(j["generation_settings"]["n_predict"], 4096);
}

TEST(LlamaCompletion, StopStringsGiveStopTypeWord) {
  LiveServer s;
  s.answer("one two three four");
  json j = post_json(s, "/completion", {{"prompt", "count"}, {"stop", {"three", "zzz"}}});
  EXPECT_EQ(j["content"], "one two ");
  EXPECT_EQ(j["stop_type"], "word");
  EXPECT_EQ(j["stopping_word"], "three");
  EXPECT_EQ(j["generation_settings"]["stop"], json::array({"three", "zzz"}));
  // A stop string that never comes: the end token ends it.
  j = post_json(s, "/completion", {{"prompt", "count"}, {"stop", {"zzz"}}});
  EXPECT_EQ(j["content"], "one two three four");
  EXPECT_EQ(j["stop_type"], "eos");
  EXPECT_EQ(j["stopping_word"], "");
  // Streamed: the last chunk says the same.
  const std::vector<json> chunks = stream_chunks(s, {{"prompt", "count"}, {"stop", {"three"}}});
  ASSERT_FALSE(chunks.empty());
  EXPECT_EQ(chunks.back()["stop_type"], "word");
  EXPECT_EQ(chunks.back()["stopping_word"], "three");
  std::string text;
  for (const json& c : chunks) text += c["content"].get<std::string>();
  EXPECT_EQ(text, "one two ");
}

TEST(LlamaCompletion, StreamedEqualsWhole) {
  LiveServer s;
  s.answer("The quick brown fox\njumps over the lazy dog");
  for (const json& extra : {json::object(), json{{"stop", {"lazy"}}}, json{{"n_probs", 2}},
                            json{{"n_predict", 4}}}) {
    SCOPED_TRACE(extra.dump());
    json body{{"prompt", "Tell me"}};
    body.update(extra);
    const json whole = post_json(s, "/completion", body);
    body["return_tokens"] = true;
    const json whole_ids = post_json(s, "/completion", body);
    body.erase("return_tokens");
    const std::vector<json> chunks = stream_chunks(s, body);
    ASSERT_GE(chunks.size(), 2u);
    std::string text;
    json ids = json::array(), probs = json::array();
    for (size_t i = 0; i + 1 < chunks.size(); ++i) {
      const json& c = chunks[i];
      EXPECT_EQ(c["stop"], false);
      EXPECT_EQ(c["index"], 0);
      EXPECT_EQ(c["tokens_evaluated"], whole["tokens_evaluated"]);
      text += c["content"].get<std::string>();
      for (const json& id : c["tokens"]) ids.push_back(id);
      if (c.contains("completion_probabilities")) {
        for (const json& p : c["completion_probabilities"]) probs.push_back(p);
      }
    }
    const json& last = chunks.back();
    EXPECT_EQ(last["stop"], true);
    EXPECT_EQ(last["content"], "");
    EXPECT_EQ(last["tokens"], json::array());
    EXPECT_EQ(text, whole["content"]);
    EXPECT_EQ(ids, whole_ids["tokens"]) << "the chunks' tokens are the whole answer's return_tokens";
    EXPECT_EQ(last["stop_type"], whole["stop_type"]);
    EXPECT_EQ(last["tokens_predicted"], whole["tokens_predicted"]);
    EXPECT_EQ(last["has_new_line"], whole["has_new_line"]);
    if (whole.contains("completion_probabilities")) {
      EXPECT_EQ(probs, whole["completion_probabilities"]);
    }
    EXPECT_EQ(last["generation_settings"]["stream"], true);
  }
}

TEST(LlamaCompletion, NProbsGiveCompletionProbabilities) {
  LiveServer s;
  s.answer("Hello world");
  const json j = post_json(s, "/completion", {{"prompt", "x"}, {"n_probs", 3}, {"return_tokens", true}});
  ASSERT_TRUE(j.contains("completion_probabilities")) << j.dump();
  const json& probs = j["completion_probabilities"];
  const std::vector<int32_t> ids = s.tok->encode("Hello world", false, true);
  ASSERT_EQ(probs.size(), ids.size()) << "the end token spells nothing and has no entry";
  std::string spelled;
  for (size_t i = 0; i < ids.size(); ++i) {
    const json& p = probs[i];
    EXPECT_EQ(p["id"], ids[i]);
    EXPECT_EQ(p["token"], std::string(s.tok->token_to_piece(ids[i], true)));
    EXPECT_TRUE(p["logprob"].is_number());
    EXPECT_TRUE(p["bytes"].is_array());
    ASSERT_EQ(p["top_logprobs"].size(), 3u);
    for (const json& t : p["top_logprobs"]) {
      EXPECT_TRUE(t["id"].is_number_integer());
      EXPECT_TRUE(t["token"].is_string());
      EXPECT_TRUE(t["logprob"].is_number());
      EXPECT_TRUE(t["bytes"].is_array());
    }
    spelled += p["token"].get<std::string>();
  }
  EXPECT_EQ(spelled, j["content"]);
  EXPECT_EQ(j["generation_settings"]["n_probs"], 3);
  std::vector<int32_t> returned;
  for (const json& id : j["tokens"]) returned.push_back(id.get<int32_t>());
  EXPECT_EQ(returned, ids);
}

TEST(LlamaCompletion, PromptForms) {
  LiveServer s;
  s.answer("ok");
  const std::vector<int32_t> text_ids = s.tok->encode("Hello there", true, true);
  // A string, the same string as the only prompt of a list, and as {"prompt_string": ...}.
  for (const json& prompt : {json("Hello there"), json::array({"Hello there"}), json{{"prompt_string", "Hello there"}},
                             json{{"prompt_string", "Hello there"}, {"multimodal_data", json::array()}}}) {
    SCOPED_TRACE(prompt.dump());
    const json j = post_json(s, "/completion", {{"prompt", prompt}});
    EXPECT_EQ(j["content"], "ok");
    EXPECT_EQ(s.script->last_prompt, text_ids);
  }
  // Token ids, as given (no BOS added), also as the only element of a list.
  const std::vector<int32_t> ids = s.tok->encode("Hello there", false, true);
  for (const json& prompt : {json(ids), json::array({ids})}) {
    const json j = post_json(s, "/completion", {{"prompt", prompt}});
    EXPECT_EQ(j["content"], "ok");
    EXPECT_EQ(s.script->last_prompt, ids);
    EXPECT_EQ(j["tokens_evaluated"], ids.size());
  }
  // Mixed: a first string gets BOS, later strings none; ids stay as given.
  const int32_t bos = s.tok->bos_id();
  std::vector<int32_t> mixed = s.tok->encode("Hello", true, true);
  const std::vector<int32_t> there = s.tok->encode(" there", false, true);
  mixed.insert(mixed.end(), there.begin(), there.end());
  mixed.push_back(ids.back());
  post_json(s, "/completion", {{"prompt", json::array({"Hello", " there", ids.back()})}});
  EXPECT_EQ(s.script->last_prompt, mixed);
  std::vector<int32_t> ids_first = {ids.front()};
  ids_first.insert(ids_first.end(), there.begin(), there.end());
  post_json(s, "/completion", {{"prompt", json::array({ids.front(), " there"})}});
  EXPECT_EQ(s.script->last_prompt, ids_first);
  EXPECT_NE(s.script->last_prompt.front(), bos);
}

TEST(LlamaCompletion, BadFieldsAre400NamingTheField) {
  LiveServer s;
  s.answer("ok");
  const json base{{"prompt", "hi"}};
  auto with = [&](const json& extra) {
    json b = base;
    b.update(extra);
    return b;
  };
  expect_refused(s, json::object(), "prompt");
  expect_refused(s, {{"prompt", ""}}, "prompt");
  expect_refused(s, {{"prompt", json::array()}}, "prompt");
  expect_refused(s, {{"prompt", 5}}, "prompt");
  expect_refused(s, {{"prompt", json::array({"a", "b"})}}, "prompt");                 // several prompts
  expect_refused(s, {{"prompt", json::array({1, 99999999})}}, "prompt[1]");           // outside the vocabulary
  expect_refused(s, {{"prompt", json::array({1, 2.5})}}, "prompt[1]");
  expect_refused(s, {{"prompt", {{"prompt_string", "x"}, {"multimodal_data", {"AAAA"}}}}}, "prompt.multimodal_data");
  expect_refused(s, with({{"n_predict", "5"}}), "n_predict");
  expect_refused(s, with({{"n_predict", 0}, {"max_tokens", 5}}), "max_tokens");  // 0 is the prompt only
  expect_refused(s, with({{"max_tokens", 0}, {"n_predict", -1}}), "n_predict");
  expect_refused(s, with({{"n_predict", 0}, {"min_tokens", 2}}), "min_tokens");
  expect_refused(s, with({{"n_probs", 21}}), "n_probs");
  expect_refused(s, with({{"n_probs", -1}}), "n_probs");
  expect_refused(s, with({{"temperature", "hot"}}), "temperature");
  expect_refused(s, with({{"top_k", -5}}), "top_k");
  expect_refused(s, with({{"grammar", "root ::= \"a\""}}), "grammar");
  expect_refused(s, with({{"mirostat", 2}}), "mirostat");
  expect_refused(s, with({{"post_sampling_probs", true}}), "post_sampling_probs");
  expect_refused(s, with({{"lora", {{{"id", 0}, {"scale", 1.0}}}}}), "lora");
  expect_refused(s, with({{"logit_bias", {{"hello", 1.0}}}}), "logit_bias");
  expect_refused(s, with({{"id_slot", 4}}), "id_slot");  // 4 slots: 0..3
  expect_refused(s, with({{"id_slot", "0"}}), "id_slot");
  expect_refused(s, with({{"return_tokens", 1}}), "return_tokens");
  expect_refused(s, with({{"timings_per_token", true}}), "timings_per_token");
  expect_refused(s, with({{"return_progress", true}}), "return_progress");
  expect_refused(s, with({{"response_fields", {"content"}}}), "response_fields");
  expect_refused(s, with({{"logprobs", 2}}), "logprobs");
  expect_refused(s, with({{"echo", true}}), "echo");
  expect_refused(s, with({{"n", 2}}), "n");
  expect_refused(s, with({{"stream_options", {{"include_usage", true}}}}), "stream_options");
  expect_refused(s, with({{"messages", {{{"role", "user"}, {"content", "hi"}}}}}), "messages");
  expect_refused(s, with({{"json_schema", 5}}), "json_schema");
  // Accepted: neutral values and what changes nothing here.
  for (const json& ok : {json{{"grammar", ""}}, json{{"id_slot", -1}}, json{{"id_slot", 2}}, json{{"cache_prompt", false}},
                         json{{"n_keep", 10}}, json{{"mirostat", 0}}, json{{"typical_p", 1.0}}, json{{"n_probs", 0}},
                         json{{"logit_bias", json::array({json::array({5, -1.0}), json::array({6, false})})}},
                         json{{"logit_bias", {{"5", 1.0}}}}, json{{"ignore_eos", false}}, json{{"seed", 42}},
                         json{{"samplers", {"penalties", "top_k", "top_p", "min_p", "temperature"}}},
                         json{{"repeat_penalty", 1.1}}, json{{"presence_penalty", 0.5}}, json{{"min_p", 0.1}},
                         json{{"post_sampling_probs", false}}, json{{"response_fields", json::array()}}}) {
    const json j = post_json(s, "/completion", with(ok));
    EXPECT_EQ(j["content"], "ok") << ok.dump();
  }
  const json j = post_json(s, "/completion", with({{"logit_bias", json::array({json::array({5, false})})}}));
  // llama-server's output form, whatever the input form; a ban's -inf as null.
  EXPECT_EQ(j["generation_settings"]["logit_bias"], json::parse(R"([{"bias":null,"token":5}])"));
  const json j2 = post_json(s, "/completion", with({{"logit_bias", {{"7", 1.5}}}}));
  EXPECT_EQ(j2["generation_settings"]["logit_bias"], json::parse(R"([{"bias":1.5,"token":7}])"));
  // logprobs false or 0 asks nothing.
  for (const json& v : {json(false), json(0)}) {
    EXPECT_EQ(post_json(s, "/completion", with({{"logprobs", v}}))["content"], "ok") << v.dump();
  }
  // The four rates are always there, 0 where nothing divides (a one-token answer).
  const json one = post_json(s, "/completion", with({{"n_predict", 1}}));
  for (const char* k : {"prompt_per_token_ms", "prompt_per_second", "predicted_per_token_ms", "predicted_per_second"}) {
    EXPECT_TRUE(one["timings"].contains(k) && one["timings"][k].is_number()) << k << " " << one["timings"].dump();
  }
  EXPECT_EQ(one["timings"]["predicted_per_second"], 0.0);
  // Not JSON, not an object.
  auto r = s.post("/completion", "{nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  r = s.post("/completion", "[1,2]");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
}

// Breaker round 28: the chat route's top_logprobs on /completion was dropped unread (200, no
// completion_probabilities). It is refused naming it and n_probs, this route's count; 0 asks
// nothing and passes.
TEST(LlamaCompletion, TopLogprobsIsRefusedNamingNProbs) {
  LiveServer s;
  s.answer("ok");
  for (const json& v : {json(3), json(1), json("2")}) {
    const json body{{"prompt", "hi"}, {"top_logprobs", v}};
    expect_refused(s, body, "top_logprobs");
    auto r = s.post("/completion", body.dump());
    ASSERT_TRUE(r);
    EXPECT_NE(r->body.find("n_probs"), std::string::npos) << r->body;
  }
  const json j = post_json(s, "/completion", {{"prompt", "hi"}, {"top_logprobs", 0}});
  EXPECT_EQ(j["content"], "ok") << j.dump();
  EXPECT_FALSE(j.contains("completion_probabilities")) << j.dump();
}

TEST(LlamaCompletion, JsonSchemaConstrainsTheOutput) {
  LiveServer s;
  s.answer("{\"a\": 1}");
  const json j = post_json(s, "/completion", {{"prompt", "json please"},
                                              {"json_schema", {{"type", "object"},
                                                               {"properties", {{"a", {{"type", "integer"}}}}},
                                                               {"required", {"a"}}}}});
  EXPECT_EQ(json::parse(j["content"].get<std::string>())["a"], 1);
}

TEST(LlamaProps, ServerSettings) {
  ServerFixtureOptions o;
  o.n_slots = 3;
  o.n_ctx = 1024;
  LiveServer s(o);
  const json j = post_json(s, "/completion", {{"prompt", "x"}});  // the server is up
  auto r = s.get("/props");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json p = json::parse(r->body);
  EXPECT_EQ(p["total_slots"], 3);
  const json& d = p["default_generation_settings"];
  EXPECT_EQ(d["n_ctx"], 1024);
  EXPECT_EQ(d["is_processing"], false);
  EXPECT_EQ(d["speculative"], false);
  // The fixture's defaults: greedy; the server's token limit.
  EXPECT_EQ(d["params"]["temperature"], 0.0);
  EXPECT_EQ(d["params"]["top_k"], 0);
  EXPECT_EQ(d["params"]["top_p"], 1.0);
  EXPECT_EQ(d["params"]["n_predict"], 4096);
  EXPECT_EQ(d["params"]["speculative.n_max"], 0);
  // A request that leaves everything out runs with these settings.
  json settings = j["generation_settings"];
  json defaults = d["params"];
  EXPECT_EQ(settings, defaults);
  EXPECT_EQ(p["bos_token"], "<bos>");
  EXPECT_TRUE(p["eos_token"].is_string());
  EXPECT_TRUE(p["chat_template"].is_string());
  EXPECT_TRUE(p["model_path"].is_string());
  EXPECT_EQ(p["build_info"], "gemmaserve");
  EXPECT_EQ(p["modalities"]["vision"], false);
}

TEST(LlamaSlots, PerSlotStateWithoutPrompts) {
  ServerFixtureOptions o;
  o.n_slots = 2;
  o.n_ctx = 512;
  o.step_delay = std::chrono::milliseconds(20);
  LiveServer s(o);
  auto r = s.get("/slots");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json slots = json::parse(r->body);
  ASSERT_EQ(slots.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(slots[i]["id"], i);
    EXPECT_EQ(slots[i]["n_ctx"], 512);
    EXPECT_EQ(slots[i]["is_processing"], false);
    // next_token: an array of one object, as llama-server's (clients read next_token[0]).
    ASSERT_TRUE(slots[i]["next_token"].is_array() && slots[i]["next_token"].size() == 1u) << slots[i].dump();
    EXPECT_EQ(slots[i]["next_token"][0]["n_decoded"], 0);
    EXPECT_EQ(slots[i]["next_token"][0]["has_next_token"], false);
  }
  // One request running: one slot processing, and the prompt is nowhere in the answer.
  s.answer("", /*endless=*/true);
  const std::string secret = "a secret prompt of another client";
  std::thread t([&] { post_json(s, "/completion", {{"prompt", secret}, {"n_predict", 60}}); });
  bool seen = false, max_decoded = false;
  for (int k = 0; k < 200 && !seen; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    r = s.get("/slots");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body.find("secret"), std::string::npos);
    slots = json::parse(r->body);
    int busy = 0;
    for (const json& sl : slots) {
      busy += sl["is_processing"].get<bool>();
      // a running slot counts its tokens as they come
      if (sl["is_processing"].get<bool>() && sl["next_token"][0]["n_decoded"].get<int>() > 0) max_decoded = true;
    }
    seen = busy == 1 && max_decoded;
  }
  EXPECT_TRUE(seen) << "no slot was seen processing with tokens decoded";
  // fail_on_no_slot: one slot is still free.
  r = s.get("/slots?fail_on_no_slot=1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  t.join();
  r = s.get("/slots");
  ASSERT_TRUE(r);
  slots = json::parse(r->body);
  for (const json& sl : slots) EXPECT_EQ(sl["is_processing"], false);
}

TEST(LlamaSlots, FailOnNoSlotWhenAllAreBusy) {
  ServerFixtureOptions o;
  o.n_slots = 1;
  o.step_delay = std::chrono::milliseconds(20);
  LiveServer s(o);
  s.answer("", /*endless=*/true);
  std::thread t([&] { post_json(s, "/completion", {{"prompt", "x"}, {"n_predict", 60}}); });
  bool refused = false;
  for (int k = 0; k < 200 && !refused; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto r = s.get("/slots?fail_on_no_slot=1");
    ASSERT_TRUE(r);
    refused = r->status == 503;
  }
  EXPECT_TRUE(refused);
  t.join();
}

TEST(LlamaNativeRoutes, MethodsAuthAndLoading) {
  ServerFixtureOptions o;
  o.keys = {"sk-test-1"};
  o.load_model = false;
  LiveServer s(o);
  const httplib::Headers key = {{"Authorization", "Bearer sk-test-1"}};
  auto loading = s.post("/completion", R"({"prompt":"hi"})", key);
  ASSERT_TRUE(loading);
  EXPECT_EQ(loading->status, 503);
  for (const char* path : {"/props", "/slots"}) {
    auto g = s.get(path, key);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->status, 503) << path;
  }
  s.load();
  s.answer("ok");
  // The key, as on every route.
  auto no_key = s.post("/completion", R"({"prompt":"hi"})");
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 401);
  auto ok = s.post("/completion", R"({"prompt":"hi"})", key);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  for (const char* path : {"/props", "/slots"}) {
    auto g = s.get(path);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->status, 401) << path;
    g = s.get(path, key);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->status, 200) << path;
    // The wrong method: 405 with Allow (POST /props changes settings in llama-server, with --props).
    auto post = s.post(path, "{}", key);
    ASSERT_TRUE(post) << path;
    EXPECT_EQ(post->status, 405) << path << " " << post->body;
    EXPECT_EQ(post->get_header_value("Allow"), "GET") << path;
    EXPECT_EQ(json::parse(post->body)["error"]["type"], "invalid_request_error") << path;
  }
  auto get = s.get("/completion", key);
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->get_header_value("Allow"), "POST");
  auto del = s.client().Delete("/completion", key);
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
  auto pre = s.client().Options("/completion", {{"Origin", "http://x"}, {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Methods"), "POST, OPTIONS");
  // Draining: no new generation; the settings still answer.
  s.http->set_draining();
  auto drained = s.post("/completion", R"({"prompt":"hi"})", key);
  ASSERT_TRUE(drained);
  EXPECT_EQ(drained->status, 503);
  auto props = s.get("/props", key);
  ASSERT_TRUE(props);
  EXPECT_EQ(props->status, 200);
}

// The real model: a greedy /completion is /v1/completions' text, and its n_probs are that
// route's logprobs.
TEST(LlamaCompletionShakes, GreedyEqualsV1Completions) {
  test::ShakesHttp server;
  server.start(/*drafter=*/false);
  for (const json& prompt : {json("ROMEO:"), json::array({2, 9, 10, 11})}) {
    SCOPED_TRACE(prompt.dump());
    const json common{{"prompt", prompt}, {"temperature", 0}, {"cache_prompt", false}};
    json native_body = common;
    native_body["n_predict"] = 24;
    native_body["n_probs"] = 2;
    json openai_body = common;
    openai_body["max_tokens"] = 24;
    openai_body["logprobs"] = 2;
    auto native = server.post(native_body, "/completion");
    auto openai = server.post(openai_body, "/v1/completions");
    ASSERT_TRUE(native && openai);
    ASSERT_EQ(native->status, 200) << native->body;
    ASSERT_EQ(openai->status, 200) << openai->body;
    const json n = json::parse(native->body);
    const json o = json::parse(openai->body);
    EXPECT_EQ(n["content"], o["choices"][0]["text"]);
    EXPECT_FALSE(n["content"].get<std::string>().empty());
    EXPECT_EQ(n["tokens_predicted"], o["usage"]["completion_tokens"]);
    EXPECT_EQ(n["tokens_evaluated"], o["usage"]["prompt_tokens"]);
    EXPECT_EQ(n["stop_type"], o["choices"][0]["finish_reason"] == "length" ? "limit" : "eos");
    const json& probs = n["completion_probabilities"];
    const json& lp = o["choices"][0]["logprobs"]["token_logprobs"];
    ASSERT_EQ(probs.size(), lp.size());
    for (size_t i = 0; i < probs.size(); ++i) {
      EXPECT_NEAR(probs[i]["logprob"].get<double>(), lp[i].get<double>(), 1e-6) << i;
      EXPECT_EQ(probs[i]["top_logprobs"].size(), 2u);
    }
    // Streamed, the same text.
    native_body["stream"] = true;
    auto streamed = server.post(native_body, "/completion");
    ASSERT_TRUE(streamed);
    std::string text;
    for (const std::string& payload : test::sse_payloads(streamed->body)) {
      text += json::parse(payload)["content"].get<std::string>();
    }
    EXPECT_EQ(text, n["content"]);
  }
}

// n_predict 0 (llama-server: evaluate the prompt, generate nothing): an empty answer ending
// as "limit", the prompt left in the slot's cache, where the next request with that prefix
// finds it; max_tokens 0 is the same (n_predict's other name on this route). Streamed, one
// final chunk. With and without the drafter.
TEST(LlamaCompletionShakes, NPredictZeroEvaluatesThePromptOnly) {
  for (const bool drafter : {false, true}) {
    SCOPED_TRACE(drafter ? "drafter" : "no drafter");
    test::ShakesHttp server;
    server.start(drafter);
    const std::string prompt = "ROMEO:\nBut soft, what light through yonder window breaks?\nJULIET:\n";
    for (const char* key : {"n_predict", "max_tokens"}) {
      SCOPED_TRACE(key);
      auto r = server.post(json{{"prompt", prompt}, {key, 0}, {"cache_prompt", false}}, "/completion");
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << r->body;
      const json j = json::parse(r->body);
      EXPECT_EQ(j["content"], "");
      EXPECT_EQ(j["tokens"], json::array());
      EXPECT_EQ(j["tokens_predicted"], 0);
      EXPECT_GT(j["tokens_evaluated"].get<int>(), 10);
      EXPECT_EQ(j["stop_type"], "limit");
      EXPECT_EQ(j["stop"], true);
      EXPECT_EQ(j["timings"]["predicted_n"], 0);
    }
    // The prompt is in a slot's cache now: the same prompt with a limit reuses all of it but
    // the last token, which is computed again for its logits.
    auto full = server.post(json{{"prompt", prompt}, {"n_predict", 0}}, "/completion");
    ASSERT_TRUE(full);
    const int n_prompt = json::parse(full->body)["tokens_evaluated"].get<int>();
    auto next = server.post(json{{"prompt", prompt}, {"n_predict", 4}, {"temperature", 0}}, "/completion");
    ASSERT_TRUE(next);
    ASSERT_EQ(next->status, 200) << next->body;
    const json n = json::parse(next->body);
    EXPECT_EQ(n["tokens_cached"], n_prompt - 1) << next->body;
    EXPECT_EQ(n["tokens_predicted"], 4);
    // Streamed: one final chunk, nothing before it.
    auto streamed = server.post(json{{"prompt", prompt}, {"n_predict", 0}, {"stream", true}}, "/completion");
    ASSERT_TRUE(streamed);
    ASSERT_EQ(streamed->status, 200) << streamed->body;
    const std::vector<std::string> payloads = test::sse_payloads(streamed->body);
    ASSERT_EQ(payloads.size(), 1u) << streamed->body;
    const json last = json::parse(payloads[0]);
    EXPECT_EQ(last["stop"], true);
    EXPECT_EQ(last["content"], "");
    EXPECT_EQ(last["tokens_predicted"], 0);
    EXPECT_EQ(last["stop_type"], "limit");
  }
}

}  // namespace
}  // namespace gs
