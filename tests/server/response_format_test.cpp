// response_format over HTTP on the real engine (the shakes model on the CPU, drafter on and
// off; decision 0027): the content of every answer, streamed or not, thinking on or off, is
// JSON that follows the schema (or, cut by max_tokens, the start of such JSON), and nothing
// comes before it (bug-case 18).
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <regex>
#include <string>
#include <thread>

#include "server/shakes_http.h"
#include "text/json_grammar.h"

namespace gs {
namespace {

using json = nlohmann::json;

// Bug-case 18's schema, with a length bound so that the tiny model finishes its value.
const json kSchema = json::parse(R"({"type":"object","properties":{"name":{"type":"string","maxLength":10},
    "lines":{"type":"integer"}},"required":["name"],"additionalProperties":false})");

// Characters of UTF-8 text (what maxLength counts).
size_t code_points(const std::string& s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

class ResponseFormat : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { server_.start(GetParam()); }
  void TearDown() override { server_.stop(); }

  static json chat(const json& response_format, int seed, bool thinking) {
    return {{"messages", json::array({{{"role", "user"}, {"content", "Name a character of the play, as JSON."}}})},
            {"response_format", response_format},
            {"max_tokens", 120},
            {"temperature", seed == 0 ? 0.0 : 1.0},
            {"seed", seed},
            {"chat_template_kwargs", {{"enable_thinking", thinking}}}};
  }

  // The streamed content and finish reason of an SSE body.
  static std::pair<std::string, std::string> streamed(const std::string& body) {
    std::string content, finish;
    for (const json& c : test::sse_choice_chunks(body)) {
      const json& d = c["choices"][0]["delta"];
      if (d.contains("content") && d["content"].is_string()) content += d["content"].get<std::string>();
      if (c["choices"][0]["finish_reason"].is_string()) finish = c["choices"][0]["finish_reason"].get<std::string>();
    }
    return {content, finish};
  }

  // Whole JSON with the schema's shape when the model stopped; the start of it when cut.
  static void check(const std::string& content, const std::string& finish,
                    const std::shared_ptr<const text::JsonGrammar>& grammar, const std::string& what) {
    text::JsonMatcher m(grammar);
    EXPECT_TRUE(m.feed(content)) << what << ": " << json(content).dump();
    if (finish == "stop") {
      ASSERT_TRUE(json::accept(content)) << what << ": " << json(content).dump();
      EXPECT_TRUE(m.can_end()) << what;
    } else {
      EXPECT_EQ(finish, "length") << what;
    }
  }

  test::ShakesHttp server_;
};

TEST_P(ResponseFormat, JsonSchemaContentFollowsTheSchema) {
  auto grammar = text::JsonGrammar::from_schema(kSchema);
  ASSERT_TRUE(grammar.ok());
  const json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", kSchema}, {"strict", true}}}};
  int stopped = 0;
  for (int seed = 0; seed <= 3; ++seed) {
    const bool thinking = seed % 2 == 1;
    const std::string what = "seed " + std::to_string(seed) + (thinking ? " thinking" : "");
    auto r = server_.post(chat(rf, seed, thinking));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json choice = json::parse(r->body)["choices"][0];
    const std::string content = choice["message"]["content"].is_string() ? choice["message"]["content"].get<std::string>() : "";
    const std::string finish = choice["finish_reason"].get<std::string>();
    check(content, finish, *grammar, what);
    if (finish == "stop") {
      ++stopped;
      const json v = json::parse(content);
      EXPECT_TRUE(v["name"].is_string()) << content;
      EXPECT_LE(v.size(), 2u) << content;
    }
    // Streamed, the same request gives the same content.
    json sb = chat(rf, seed, thinking);
    sb["stream"] = true;
    auto s = server_.post(sb);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->status, 200) << s->body;
    const auto [streamed_content, streamed_finish] = streamed(s->body);
    EXPECT_EQ(streamed_content, content) << what;
    EXPECT_EQ(streamed_finish, finish) << what;
  }
  EXPECT_GT(stopped, 0) << "no answer finished its value";
}

// Enum values that hold Gemma markup: written raw, the parser read "<|channel>" as a thought's
// opener and "<turn|>" as markup to drop, and the content was '"' or '"x"' with finish
// "stop". They are written with '<' as \u003c, and the content parses to the value.
TEST_P(ResponseFormat, EnumValuesHoldingMarkupComeBackWhole) {
  const json schema = json::parse(R"({"enum":["<|channel>","<turn|>x","<tool_call|>"]})");
  const json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "m"}, {"schema", schema}}}};
  for (int seed = 0; seed <= 3; ++seed) {
    auto r = server_.post(chat(rf, seed, /*thinking=*/false));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json choice = json::parse(r->body)["choices"][0];
    ASSERT_EQ(choice["finish_reason"], "stop") << r->body;
    const std::string content = choice["message"]["content"].get<std::string>();
    ASSERT_TRUE(json::accept(content)) << r->body;
    const json v = json::parse(content);
    EXPECT_TRUE(v == "<|channel>" || v == "<turn|>x" || v == "<tool_call|>") << r->body;
    EXPECT_FALSE(choice["message"].contains("reasoning_content")) << r->body;
  }
}

// An assistant prefill under response_format that can begin the value is its start: prefill
// plus answer is one JSON text that follows the schema (before, the answer had to be a whole
// value of its own, so the two together were not JSON). A prefill that cannot begin one
// stays before the value, and the answer is a whole value.
TEST_P(ResponseFormat, AnAssistantPrefillIsTheStartOfTheValue) {
  auto grammar = text::JsonGrammar::from_schema(kSchema);
  ASSERT_TRUE(grammar.ok());
  const json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", kSchema}}}};
  for (bool thinking : {false, true}) {
    const std::string prefill = "{\"name\": \"";
    json body = chat(rf, 0, thinking);
    body["messages"].push_back({{"role", "assistant"}, {"content", prefill}});
    auto r = server_.post(body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json choice = json::parse(r->body)["choices"][0];
    const std::string content = choice["message"]["content"].is_string() ? choice["message"]["content"].get<std::string>() : "";
    check(prefill + content, choice["finish_reason"].get<std::string>(), *grammar, thinking ? "thinking" : "no thinking");
  }
  json text = chat(rf, 0, false);
  text["messages"].push_back({{"role", "assistant"}, {"content", "Sure, here it is: {"}});
  auto r = server_.post(text);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json choice = json::parse(r->body)["choices"][0];
  const std::string content = choice["message"]["content"].is_string() ? choice["message"]["content"].get<std::string>() : "";
  check(content, choice["finish_reason"].get<std::string>(), *grammar, "text before the value");
}

// llama-server's top-level json_schema and vLLM's guided_json (an object or a JSON string)
// are the schema of response_format json_schema: the same greedy answer, which follows it.
// Before, both were ignored and the model wrote free text.
TEST_P(ResponseFormat, OtherServersSchemaFieldsConstrainTheSame) {
  auto grammar = text::JsonGrammar::from_schema(kSchema);
  ASSERT_TRUE(grammar.ok());
  const json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", kSchema}}}};
  auto base = server_.post(chat(rf, 0, false));
  ASSERT_TRUE(base);
  ASSERT_EQ(base->status, 200) << base->body;
  const json want = json::parse(base->body)["choices"][0];
  check(want["message"]["content"].get<std::string>(), want["finish_reason"].get<std::string>(), *grammar, "base");
  for (const auto& [key, value] : {std::pair<std::string, json>{"json_schema", kSchema},
                                   std::pair<std::string, json>{"guided_json", kSchema},
                                   std::pair<std::string, json>{"guided_json", kSchema.dump()}}) {
    json body = chat(rf, 0, false);
    body.erase("response_format");
    body[key] = value;
    auto r = server_.post(body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << key << ": " << r->body;
    const json choice = json::parse(r->body)["choices"][0];
    EXPECT_EQ(choice["message"]["content"], want["message"]["content"]) << key << " " << value.dump();
    EXPECT_EQ(choice["finish_reason"], want["finish_reason"]) << key;
  }
  // On /v1/completions too.
  const json cb = {{"prompt", "The cast, as JSON: "}, {"guided_json", kSchema}, {"max_tokens", 60},
                   {"temperature", 1.0}, {"seed", 1}};
  auto c = server_.post(cb, "/v1/completions");
  ASSERT_TRUE(c);
  ASSERT_EQ(c->status, 200) << c->body;
  const json cc = json::parse(c->body)["choices"][0];
  check(cc["text"].get<std::string>(), cc["finish_reason"].get<std::string>(), *grammar, "completions guided_json");
}

TEST_P(ResponseFormat, JsonObjectOnBothEndpoints) {
  auto object = text::JsonGrammar::any_object();
  for (int seed = 1; seed <= 2; ++seed) {
    auto r = server_.post(chat({{"type", "json_object"}}, seed, false));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json choice = json::parse(r->body)["choices"][0];
    check(choice["message"]["content"].get<std::string>(), choice["finish_reason"].get<std::string>(), object,
          "chat seed " + std::to_string(seed));
    // /v1/completions takes it too (as llama-server does).
    const json cb = {{"prompt", "The cast, as JSON: "}, {"response_format", {{"type", "json_object"}}},
                     {"max_tokens", 60}, {"temperature", 1.0}, {"seed", seed}};
    auto c = server_.post(cb, "/v1/completions");
    ASSERT_TRUE(c);
    ASSERT_EQ(c->status, 200) << c->body;
    const json cc = json::parse(c->body)["choices"][0];
    check(cc["text"].get<std::string>(), cc["finish_reason"].get<std::string>(), object,
          "completions seed " + std::to_string(seed));
  }
}

TEST_P(ResponseFormat, ABadSchemaIsA400NamingTheKeyword) {
  const json rf = {{"type", "json_schema"},
                   {"json_schema", {{"name", "p"}, {"schema", {{"type", "object"}, {"properties", {{"a", {{"type", "strin"}}}}}}}}}};
  auto r = server_.post(chat(rf, 0, false));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  const json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["type"], "invalid_request_error") << r->body;
  EXPECT_EQ(e["param"], "response_format.json_schema.schema.properties.a.type") << r->body;
}

// Bug-case 41: a value that cannot end before the context does (at least 5000 items): the
// answer stops at the context's end with "length" and the start of a value, streamed or not,
// while a request beside it in the other slot answers as usual; the server keeps serving.
TEST_P(ResponseFormat, AValueLongerThanTheContextEndsWithLength) {
  const json schema = {{"type", "array"}, {"items", {{"enum", json::array({"ROMEO", "JULIET"})}}}, {"minItems", 5000}};
  auto grammar = text::JsonGrammar::from_schema(schema);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  json body = chat({{"type", "json_schema"}, {"json_schema", {{"name", "cast"}, {"schema", schema}}}}, 1, false);
  body.erase("max_tokens");  // only the context (1024 tokens) stops it
  std::string cast = "Name the cast, as JSON:";  // a long prompt: a short run to the end
  while (server_.tokenizer().encode(cast, false, false).size() < 900) cast += " ROMEO, JULIET, MERCUTIO and TYBALT.";
  body["messages"][0]["content"] = cast;
  json beside = chat({{"type", "json_object"}}, 2, false);
  std::optional<httplib::Result> other;
  std::thread t([&] { other.emplace(server_.post(beside)); });
  auto r = server_.post(body);
  t.join();
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json whole = json::parse(r->body);
  const std::string content = whole["choices"][0]["message"]["content"].get<std::string>();
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length") << r->body.substr(0, 300);
  EXPECT_EQ(whole["usage"]["total_tokens"], 1024) << whole["usage"].dump();
  check(content, "length", *grammar, "whole");
  body["stream"] = true;
  auto st = server_.post(body);
  ASSERT_TRUE(st);
  ASSERT_EQ(st->status, 200) << st->body.substr(0, 300);
  const auto [streamed_content, streamed_finish] = streamed(st->body);
  EXPECT_EQ(streamed_finish, "length");
  check(streamed_content, "length", *grammar, "streamed");
  ASSERT_TRUE(other && *other);
  ASSERT_EQ((*other)->status, 200) << (*other)->body;
  const json oc = json::parse((*other)->body)["choices"][0];
  check(oc["message"]["content"].get<std::string>(), oc["finish_reason"].get<std::string>(),
        text::JsonGrammar::any_object(), "beside");
  auto again = server_.post(chat({{"type", "json_object"}}, 3, false));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200) << again->body;
}

// pattern, format and the property counts on the real engine: every answer that finishes
// parses, its code matches the pattern (checked by std::regex, an engine of its own), its
// day is a calendar date and it has the properties the counts allow.
TEST_P(ResponseFormat, PatternFormatAndPropertyCountsAreFollowed) {
  const json schema = json::parse(R"({"type":"object","properties":{
      "code":{"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"},
      "day":{"type":"string","format":"date"},
      "id":{"type":"string","format":"uuid"},
      "note":{"type":"string","maxLength":8}},
    "required":["code","day"],"minProperties":3,"maxProperties":3,"additionalProperties":false})");
  auto grammar = text::JsonGrammar::from_schema(schema);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  const json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "entry"}, {"schema", schema}, {"strict", true}}}};
  int stopped = 0;
  for (int seed = 0; seed <= 3; ++seed) {
    const bool thinking = seed == 3;
    json body = chat(rf, seed, thinking);
    body["max_tokens"] = 200;
    if (seed == 2) body["stream"] = true;
    auto r = server_.post(body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    std::string content, finish;
    if (seed == 2) {
      std::tie(content, finish) = streamed(r->body);
    } else {
      const json choice = json::parse(r->body)["choices"][0];
      content = choice["message"]["content"].is_string() ? choice["message"]["content"].get<std::string>() : "";
      finish = choice["finish_reason"].get<std::string>();
    }
    const std::string what = "seed " + std::to_string(seed);
    check(content, finish, *grammar, what);
    if (finish != "stop") continue;
    ++stopped;
    const json v = json::parse(content);
    EXPECT_EQ(v.size(), 3u) << content;
    ASSERT_TRUE(v["code"].is_string() && v["day"].is_string()) << content;
    EXPECT_TRUE(std::regex_search(v["code"].get<std::string>(), std::regex("^[A-Z]{2}-\\d{3}$"))) << content;
    const std::string day = v["day"].get<std::string>();
    ASSERT_TRUE(std::regex_search(day, std::regex("^\\d{4}-\\d{2}-\\d{2}$"))) << content;
    const int y = std::stoi(day.substr(0, 4)), m = std::stoi(day.substr(5, 2)), d = std::stoi(day.substr(8, 2));
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    const int days[] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    EXPECT_TRUE(m >= 1 && m <= 12 && d >= 1 && d <= days[m - 1]) << content;
    if (v.contains("id")) {
      EXPECT_TRUE(std::regex_search(v["id"].get<std::string>(),
                                    std::regex("^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")))
          << content;
    }
  }
  EXPECT_GT(stopped, 0) << "no answer finished its value";
  // An unsupported pattern is a 400 naming the keyword and the feature.
  const json bad = {{"type", "object"}, {"properties", {{"a", {{"type", "string"}, {"pattern", "(?=x)"}}}}}};
  auto r = server_.post(chat({{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", bad}}}}, 0, false));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  const json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["param"], "response_format.json_schema.schema.properties.a.pattern") << r->body;
  EXPECT_NE(e["message"].get<std::string>().find("lookahead"), std::string::npos) << r->body;
}

// A logit_bias that bans (llama-server's `false`) every token the schema allows: the request
// cannot be answered, and is a 400 naming logit_bias (streamed: an error event), for that
// request alone. Before (helper-break14), the sampler took an arbitrary banned token, the
// constraint, fed a token outside its grammar, ended, and the answer was 200 with free text
// ("Prestuffsectable aut ..." for the schema {"const":"a"}). Here every token that can
// start the value '"a"' is banned, so nothing can be sampled at the first step.
TEST_P(ResponseFormat, BansOfEveryTokenTheSchemaAllowsAreA400ForThatRequestAlone) {
  const text::Tokenizer& tok = server_.tokenizer();
  json bias = json::object();
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    const std::string_view piece = tok.token_to_piece(id);
    if (!piece.empty() && piece[0] == '"') bias[std::to_string(id)] = false;
  }
  ASSERT_FALSE(bias.empty());
  json body = chat({{"type", "json_schema"}, {"json_schema", {{"name", "a"}, {"schema", {{"const", "a"}}}}}}, 0,
                   /*thinking=*/false);
  body["logit_bias"] = bias;
  // Beside it, an ordinary request runs to its end (a step's failure would fail the batch).
  json other = {{"prompt", "ROMEO:"}, {"max_tokens", 40}, {"temperature", 0}};
  std::optional<httplib::Result> other_r;
  std::thread t([&] { other_r.emplace(server_.post(other, "/v1/completions")); });
  for (int n : {1, 2}) {
    body["n"] = n;
    auto r = server_.post(body);
    EXPECT_TRUE(r);
    if (!r) continue;
    EXPECT_EQ(r->status, 400) << r->body;
    const json e = json::parse(r->body).value("error", json::object());
    EXPECT_EQ(e.value("param", json()), "logit_bias") << r->body;
    EXPECT_NE(e.value("message", "").find("output constraint"), std::string::npos) << r->body;
  }
  body["n"] = 1;
  body["stream"] = true;
  auto s = server_.post(body);
  EXPECT_TRUE(s);
  const std::string streamed = s ? s->body : "";
  EXPECT_NE(streamed.find("\"error\""), std::string::npos) << streamed;
  EXPECT_NE(streamed.find("\"param\":\"logit_bias\""), std::string::npos) << streamed;
  EXPECT_EQ(streamed.find("finish_reason\":\"stop"), std::string::npos) << streamed;
  t.join();
  ASSERT_TRUE(other_r && *other_r);
  ASSERT_EQ((*other_r)->status, 200) << (*other_r)->body;
  EXPECT_EQ(json::parse((*other_r)->body)["usage"]["completion_tokens"], 40) << (*other_r)->body;
  // A conflict further on: '"x' can be written, then every way to go on with 'q' is banned
  // (the byte token <0x71> too); the step after '"x' fails, on the decode path.
  json q_bias = json::object();
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    const std::string_view piece = tok.token_to_piece(id);
    if (piece.find('q') != std::string_view::npos) q_bias[std::to_string(id)] = false;
  }
  json later = body;
  later.erase("stream");
  later["response_format"]["json_schema"]["schema"] = {{"const", "xq"}};
  later["logit_bias"] = q_bias;
  auto lr = server_.post(later);
  ASSERT_TRUE(lr);
  EXPECT_EQ(lr->status, 400) << lr->body;
  EXPECT_NE(lr->body.find("after '\\\"x'"), std::string::npos) << lr->body;
  // A ban that leaves a way (the value's closing quote from the byte token) is no conflict.
  body.erase("stream");
  body["response_format"]["json_schema"]["schema"] = {{"type", "string"}, {"maxLength", 3}};
  json close_bias = json::object();
  for (const auto& [id, v] : bias.items()) {
    if (tok.token_to_piece(std::stoi(id)) != "\"") close_bias[id] = false;
  }
  body["logit_bias"] = close_bias;
  auto ok = server_.post(body);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

// min_tokens holds the end-of-generation tokens back; a logit_bias that bans every other
// token leaves nothing for the first steps: a 400 naming logit_bias (before, 200 with an
// empty answer that ended at once, min_tokens broken).
TEST_P(ResponseFormat, BansOfEveryTokenButTheHeldEndTokensAreA400) {
  const text::Tokenizer& tok = server_.tokenizer();
  json bias = json::object();
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (!tok.is_eog(id)) bias[std::to_string(id)] = false;
  }
  for (const std::string path : {"/v1/completions", "/v1/chat/completions"}) {
    json body = {{"max_tokens", 5}, {"min_tokens", 3}, {"logit_bias", bias}};
    if (path == "/v1/completions") {
      body["prompt"] = "ROMEO:";
    } else {
      body["messages"] = json::array({{{"role", "user"}, {"content", "hi"}}});
    }
    auto r = server_.post(body, path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << path << ": " << r->body;
    EXPECT_EQ(json::parse(r->body)["error"]["param"], "logit_bias") << r->body;
    // Without min_tokens the end tokens may come: an empty answer that stops.
    body.erase("min_tokens");
    r = server_.post(body, path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
  }
}

// With tools offered (tool_choice auto) the answer is the value or calls, nothing else
// (decision 0027 §4): a call the model opens instead of the value names a declared function
// and follows its schema, and only an end (or, with parallel calls, another call) comes after
// it. The call's opener used to end every constraint: at temperature 1 the shakes model then
// wrote free text after it, which did not parse as a call and came back as content that was
// not JSON (8 of 12 seeds), on the chat, Responses and Messages routes alike.
TEST_P(ResponseFormat, WithToolsTheAnswerIsTheValueOrDeclaredCalls) {
  auto grammar = text::JsonGrammar::from_schema(kSchema);
  ASSERT_TRUE(grammar.ok());
  const json tools = json::parse(R"([
    {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
      "properties":{"city":{"type":"string","maxLength":8}},"required":["city"],"additionalProperties":false}}},
    {"type":"function","function":{"name":"get_time","parameters":{"type":"object",
      "properties":{"tz":{"enum":["utc","cet"]}},"required":["tz"],"additionalProperties":false}}}])");
  const json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", kSchema}}}};
  const auto check_call = [](const json& name, const std::string& arguments, const std::string& what) {
    ASSERT_TRUE(json::accept(arguments)) << what << ": " << arguments;
    const json a = json::parse(arguments);
    ASSERT_TRUE(a.is_object()) << what;
    if (name == "get_weather") {
      ASSERT_EQ(a.size(), 1u) << what << ": " << arguments;
      ASSERT_TRUE(a["city"].is_string()) << what << ": " << arguments;
      EXPECT_LE(code_points(a["city"].get<std::string>()), 8u) << what << ": " << arguments;
    } else {
      ASSERT_EQ(name, "get_time") << what;
      ASSERT_EQ(a.size(), 1u) << what << ": " << arguments;
      EXPECT_TRUE(a["tz"] == "utc" || a["tz"] == "cet") << what << ": " << arguments;
    }
  };
  int calls = 0, values = 0;
  for (int seed = 1; seed <= 12; ++seed) {
    for (const bool parallel : {true, false}) {
      const std::string what = "seed " + std::to_string(seed) + (parallel ? "" : " one call");
      json body = chat(rf, seed, /*thinking=*/false);
      body["tools"] = tools;
      body["parallel_tool_calls"] = parallel;
      auto r = server_.post(body);
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << r->body;
      const json choice = json::parse(r->body)["choices"][0];
      const json& message = choice["message"];
      const std::string finish = choice["finish_reason"].get<std::string>();
      const std::string content = message["content"].is_string() ? message["content"].get<std::string>() : "";
      if (message.contains("tool_calls")) {
        ++calls;
        EXPECT_EQ(finish, "tool_calls") << what << ": " << r->body;
        EXPECT_EQ(content, "") << what;
        if (!parallel) {
          EXPECT_EQ(message["tool_calls"].size(), 1u) << what;
        }
        for (const json& c : message["tool_calls"]) {
          check_call(c["function"]["name"], c["function"]["arguments"].get<std::string>(), what);
        }
      } else {
        ++values;
        check(content, finish, *grammar, what);
      }
      if (seed > 4) continue;
      // The Messages route (output_config.format) answers the same way.
      json m = {{"max_tokens", 120}, {"temperature", 1.0}, {"thinking", {{"type", "disabled"}}},
                {"messages", body["messages"]},
                {"output_config", {{"format", {{"type", "json_schema"}, {"schema", kSchema}}}}}};
      m["tools"] = json::array();
      for (const json& t : tools) {
        m["tools"].push_back({{"name", t["function"]["name"]}, {"input_schema", t["function"]["parameters"]}});
      }
      if (!parallel) m["tool_choice"] = {{"type", "auto"}, {"disable_parallel_tool_use", true}};
      auto a = server_.post(m, "/v1/messages");
      ASSERT_TRUE(a);
      ASSERT_EQ(a->status, 200) << a->body;
      const json answer = json::parse(a->body);  // (a temporary's content would dangle in the loop)
      for (const json& block : answer["content"]) {
        if (block["type"] == "tool_use") {
          check_call(block["name"], block["input"].dump(), what + " (messages)");
        } else {
          ASSERT_EQ(block["type"], "text") << a->body;
          text::JsonMatcher matcher(*grammar);
          EXPECT_TRUE(matcher.feed(block["text"].get<std::string>())) << what << " (messages): " << a->body;
        }
      }
    }
  }
  EXPECT_GT(calls, 0) << "no answer was a call";
  EXPECT_GT(values, 0) << "no answer was a value";
}

// A prefill that leaves a tool call open, under response_format with tools offered: the answer
// is the rest of that call (and calls after it), never the value. The value's grammar used to
// be applied from the prefill's end, inside the call's string argument: the arguments came
// back as {"city":"Par{\"name\" :\"elightvent\" }"}. Now the call's own schema holds the rest
// of its arguments (here a city of at most 8 characters), and only an end or another call of a
// declared function follows.
TEST_P(ResponseFormat, AToolCallOpenInAPrefillIsFinishedUnderItsSchema) {
  const json tools = json::parse(R"([
    {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
      "properties":{"city":{"type":"string","maxLength":8}},"required":["city"],"additionalProperties":false}}}])");
  const json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", kSchema}}}};
  for (int seed = 1; seed <= 8; ++seed) {
    const std::string what = "seed " + std::to_string(seed);
    json body = chat(rf, seed, /*thinking=*/false);
    body["tools"] = tools;
    body["messages"].push_back({{"role", "assistant"}, {"content", "<|tool_call>call:get_weather{city:<|\"|>Par"}});
    auto r = server_.post(body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json choice = json::parse(r->body)["choices"][0];
    const json& message = choice["message"];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << what << ": " << r->body;
    EXPECT_TRUE(message["content"].is_null() || message["content"] == "") << what << ": " << r->body;
    ASSERT_TRUE(message.contains("tool_calls")) << what << ": " << r->body;
    bool first = true;
    for (const json& c : message["tool_calls"]) {
      EXPECT_EQ(c["function"]["name"], "get_weather") << what;
      const std::string arguments = c["function"]["arguments"].get<std::string>();
      ASSERT_TRUE(json::accept(arguments)) << what << ": " << arguments;
      const json a = json::parse(arguments);
      ASSERT_TRUE(a.contains("city") && a["city"].is_string()) << what << ": " << arguments;
      EXPECT_EQ(a.size(), 1u) << what << ": " << arguments;
      const std::string city = a["city"].get<std::string>();
      EXPECT_LE(code_points(city), 8u) << what << ": " << arguments;
      if (first) {
        EXPECT_EQ(city.rfind("Par", 0), 0u) << what << ": " << arguments;
      }
      first = false;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Drafter, ResponseFormat, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "DrafterOn" : "DrafterOff"; });

}  // namespace
}  // namespace gs
