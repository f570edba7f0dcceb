// llama-server's utility routes over a live server: POST /tokenize and /detokenize (round
// trips on the shakes vocabulary and the full Gemma 4 one, pieces, bad bodies, a million ids;
// vLLM's bodies and answers)
// and POST /apply-template (the prompt the chat route feeds the model, the chat route's 400s);
// wrong methods, API keys, loading.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include "gguf/gguf_reader.h"
#include "server/api_request.h"
#include "server/request_plan.h"
#include "server/token_api.h"
#include "server_fixture.h"
#include "text/chat_format.h"
#include "text/utf8.h"

namespace gs {
namespace {

using nlohmann::json;
using test::LiveServer;
using test::ServerFixtureOptions;

// The body of a 200 response to POST `path`, parsed (a test failure otherwise).
json post_ok(const LiveServer& s, const std::string& path, const json& body) {
  auto r = s.post(path, body.dump());
  EXPECT_TRUE(r) << path;
  if (!r) return json();
  EXPECT_EQ(r->status, 200) << path << " " << body.dump().substr(0, 200) << " -> " << r->body.substr(0, 300);
  return json::parse(r->body, nullptr, false);
}

std::vector<int32_t> tokenize(const LiveServer& s, const std::string& content, bool add_special,
                              std::optional<bool> parse_special = std::nullopt) {
  json body{{"content", content}, {"add_special", add_special}};
  if (parse_special) body["parse_special"] = *parse_special;
  const json j = post_ok(s, "/tokenize", body);
  std::vector<int32_t> ids;
  if (!j.is_object() || !j["tokens"].is_array()) {
    ADD_FAILURE() << "no tokens array: " << j.dump();
    return ids;
  }
  for (const auto& v : j["tokens"]) ids.push_back(v.get<int32_t>());
  return ids;
}

std::string detokenize(const LiveServer& s, const std::vector<int32_t>& ids) {
  const json j = post_ok(s, "/detokenize", json{{"tokens", ids}});
  if (!j.is_object() || !j["content"].is_string()) {
    ADD_FAILURE() << "no content string: " << j.dump().substr(0, 300);
    return {};
  }
  return j["content"].get<std::string>();
}

// A 400 invalid_request_error whose param is `param` (when given).
void expect_400(const httplib::Result& r, const std::string& context, const std::string& param = "") {
  ASSERT_TRUE(r) << context;
  EXPECT_EQ(r->status, 400) << context << " -> " << r->body;
  const json j = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << context << " -> " << r->body;
  EXPECT_EQ(j["error"]["type"], "invalid_request_error") << context;
  EXPECT_FALSE(j["error"]["message"].get<std::string>().empty()) << context;
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param) << context << " -> " << r->body;
  }
}

// Strings whose round trip must give them back: plain text, emoji (with a modifier and a
// ZWJ sequence), CJK, runs of spaces, tabs and newlines, and Gemma 4 special-token text
// (control tokens such as <|turn>, <turn|>, <bos>, and user-defined ones such as
// <|channel>, <|tool_call>, <|"|>, spec §8 / chat_format.h markup).
const std::vector<std::string> kRoundTrip = {
    "Hello world",
    "ROMEO:\nBut, soft! what light through yonder window breaks?",
    "emoji \xF0\x9F\x98\x80 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB!",
    "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE6\x96\x87\xE7\xAB\xA0 \xE4\xB8\xAD\xE6\x96\x87 "
    "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
    "   leading, inner    runs\t\t\tof tabs\n\n\n\nand newlines   \r\n  trailing   ",
    " ",
    "\n",
    "<|turn>user\nHi there<turn|>\n<|turn>model\n<|channel>thought\nhmm<channel|>Hello<turn|>",
    "<bos>text after a literal bos",
    "<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|>",
    "<|think|><|tool>declaration<tool|><|tool_response>x<tool_response|>",
    "almost <|turn or turn|> or <|unknown_marker|>",
    "na\xC3\xAFve caf\xC3\xA9 \xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80 \ttabs  and  spaces",
    "",
};

void expect_round_trips(const LiveServer& s, const text::Tokenizer& tok) {
  for (const std::string& text : kRoundTrip) {
    for (const bool add_special : {false, true}) {
      for (const bool parse_special : {true, false}) {
        SCOPED_TRACE("add_special " + std::to_string(add_special) + " parse_special " + std::to_string(parse_special) +
                     ": " + text);
        const std::vector<int32_t> ids = tokenize(s, text, add_special, parse_special);
        // The model's own tokenizer, as a prompt would be tokenized.
        EXPECT_EQ(ids, tok.encode(text, add_special, parse_special));
        const std::string back = detokenize(s, ids);
        if (add_special) {
          ASSERT_FALSE(ids.empty());
          EXPECT_EQ(ids.front(), tok.bos_id());
          EXPECT_EQ(back, "<bos>" + text);  // llama-server renders control tokens as their text
        } else {
          EXPECT_EQ(back, text);
        }
      }
    }
  }
}

TEST(TokenRoutes, RoundTripOnTheShakesVocabulary) {
  LiveServer s;
  expect_round_trips(s, *s.tok);
  // parse_special defaults to true (llama-server): the markup is one token each.
  const auto ids = tokenize(s, "<|turn>user\nHi<turn|>", false);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), *s.tok->find_token("<|turn>"));
  EXPECT_EQ(ids.back(), *s.tok->find_token("<turn|>"));
  const auto as_text = tokenize(s, "<|turn>user\nHi<turn|>", false, false);
  EXPECT_EQ(std::count(as_text.begin(), as_text.end(), *s.tok->find_token("<|turn>")), 0);
  EXPECT_GT(as_text.size(), ids.size());
  EXPECT_EQ(tokenize(s, "x", true).front(), s.tok->bos_id());
  EXPECT_EQ(tokenize(s, "", true), std::vector<int32_t>{s.tok->bos_id()});
  EXPECT_TRUE(tokenize(s, "", false).empty());
}

// The full Gemma 4 vocabulary (ids as llama.cpp gives them, tests/e2e/test_tokenize.sh).
TEST(TokenRoutes, RoundTripOnTheFullGemma4Vocabulary) {
  ServerFixtureOptions o;
  o.load_model = false;
  LiveServer s(o);
  auto file = gguf::GgufFile::open(test::shared_path("test-assets/gemma-tokenizer/ggml-vocab-gemma-4-reconstructed.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto tok = text::Tokenizer::from_gguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  s.tok = *tok;
  s.load();
  EXPECT_EQ(tokenize(s, "Hello world", false), (std::vector<int32_t>{9259, 1902}));
  EXPECT_EQ(tokenize(s, "Hello world", true), (std::vector<int32_t>{2, 9259, 1902}));
  EXPECT_EQ(tokenize(s, "<|turn>user\nHi<turn|>", false), (std::vector<int32_t>{105, 2364, 107, 10979, 106}));
  EXPECT_EQ(tokenize(s, "<turn|>", false, false), (std::vector<int32_t>{236820, 887, 111038}));
  EXPECT_EQ(detokenize(s, {105, 2364}), "<|turn>user");
  expect_round_trips(s, *s.tok);
}

TEST(TokenRoutes, WithPieces) {
  LiveServer s;
  const std::string text = "<|turn>user\nHi \xF0\x9F\x98\x80 \xE6\x97\xA5\xE6\x9C\xAC<turn|>";
  for (const bool add_special : {false, true}) {
    const json j = post_ok(s, "/tokenize", json{{"content", text}, {"add_special", add_special}, {"with_pieces", true}});
    ASSERT_TRUE(j["tokens"].is_array()) << j.dump();
    const std::vector<int32_t> ids = s.tok->encode(text, add_special, true);
    ASSERT_EQ(j["tokens"].size(), ids.size());
    std::string joined;
    size_t n_byte_arrays = 0;
    for (size_t k = 0; k < ids.size(); ++k) {
      const json& e = j["tokens"][k];
      ASSERT_TRUE(e.is_object()) << e.dump();
      EXPECT_EQ(e.size(), 2u) << e.dump();
      EXPECT_EQ(e["id"], ids[k]);
      const std::string piece(s.tok->token_to_piece(ids[k], /*render_special=*/true));
      if (e["piece"].is_string()) {
        EXPECT_EQ(e["piece"].get<std::string>(), piece);
        EXPECT_TRUE(text::is_valid_utf8(piece));
        joined += piece;
      } else {
        // Not UTF-8 on its own: the byte values, as llama-server gives them.
        ASSERT_TRUE(e["piece"].is_array()) << e.dump();
        EXPECT_FALSE(text::is_valid_utf8(piece));
        std::string bytes;
        for (const auto& b : e["piece"]) {
          ASSERT_TRUE(b.is_number_integer());
          ASSERT_GE(b.get<int>(), 0);
          ASSERT_LE(b.get<int>(), 255);
          bytes += static_cast<char>(b.get<int>());
        }
        EXPECT_EQ(bytes, piece);
        joined += bytes;
        ++n_byte_arrays;
      }
    }
    EXPECT_EQ(joined, add_special ? "<bos>" + text : text);
    // The shakes vocabulary spells the emoji and the CJK characters in byte tokens.
    EXPECT_GT(n_byte_arrays, 0u);
    if (add_special) {
      EXPECT_EQ(j["tokens"][0]["piece"], "<bos>");
    }
    // with_pieces false: plain ids.
    const json plain = post_ok(s, "/tokenize", json{{"content", text}, {"add_special", add_special}});
    EXPECT_EQ(plain, (json{{"tokens", ids}}));
  }
}

// Byte tokens that end up invalid UTF-8 become U+FFFD: the body is always valid JSON.
TEST(TokenRoutes, DetokenizeInvalidUtf8IsReplaced) {
  LiveServer s;
  const int32_t e6 = *s.tok->find_token("<0xE6>");
  const int32_t x97 = *s.tok->find_token("<0x97>");
  const int32_t xa5 = *s.tok->find_token("<0xA5>");
  const int32_t ff = *s.tok->find_token("<0xFF>");
  const int32_t hello = s.tok->encode("Hello", false, false).front();
  EXPECT_EQ(detokenize(s, {e6, x97, xa5}), "\xE6\x97\xA5");  // assembled into one character
  for (const std::vector<int32_t>& ids : std::vector<std::vector<int32_t>>{
           {e6}, {e6, x97}, {ff}, {hello, ff, hello}, {x97, x97, x97}, {e6, hello, xa5}}) {
    auto r = s.post("/detokenize", json{{"tokens", ids}}.dump());
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_TRUE(text::is_valid_utf8(r->body));
    const json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r->body;
    const std::string content = j["content"].get<std::string>();
    EXPECT_NE(content.find(text::kReplacementChar), std::string::npos) << content;
  }
  EXPECT_EQ(detokenize(s, {}), "");
}

TEST(TokenRoutes, MalformedBodiesAre400) {
  LiveServer s;
  const int32_t n_vocab = s.tok->n_vocab();
  for (const std::string& body : {std::string(""), std::string("[]"), std::string("5"), std::string("{"),
                                  std::string("{\"content\":\"\xC3\x28\"}")}) {
    expect_400(s.post("/tokenize", body), "tokenize body: " + body);
    expect_400(s.post("/detokenize", body), "detokenize body: " + body);
  }
  const std::vector<std::pair<std::string, std::string>> bad_tokenize = {
      {"{}", "content"},
      {R"({"content":null})", "content"},
      {R"({"content":5})", "content"},
      {R"({"content":["a",1]})", "content"},
      {R"({"content":{"text":"a"}})", "content"},
      {R"({"content":"x","add_special":"yes"})", "add_special"},
      {R"({"content":"x","add_special":1})", "add_special"},
      {R"({"content":"x","with_pieces":"true"})", "with_pieces"},
      {R"({"content":"x","parse_special":0})", "parse_special"},
  };
  for (const auto& [body, param] : bad_tokenize) expect_400(s.post("/tokenize", body), "tokenize " + body, param);
  const std::vector<std::pair<std::string, std::string>> bad_detokenize = {
      {"{}", "tokens"},
      {R"({"tokens":null})", "tokens"},
      {R"({"tokens":"1 2"})", "tokens"},
      {R"({"tokens":5})", "tokens"},
      {R"({"tokens":{"0":1}})", "tokens"},
      {R"({"tokens":[1,"2"]})", "tokens[1]"},
      {R"({"tokens":[1.5]})", "tokens[0]"},
      {R"({"tokens":[5.0]})", "tokens[0]"},
      {R"({"tokens":[1e3]})", "tokens[0]"},
      {R"({"tokens":[null]})", "tokens[0]"},
      {R"({"tokens":[true]})", "tokens[0]"},
      {R"({"tokens":[[1]]})", "tokens[0]"},
      {R"({"tokens":[{"id":1}]})", "tokens[0]"},
      {R"({"tokens":[0,-1]})", "tokens[1]"},
      {R"({"tokens":[)" + std::to_string(n_vocab) + "]}", "tokens[0]"},
      {R"({"tokens":[1,2,2147483648]})", "tokens[2]"},
      {R"({"tokens":[18446744073709551615]})", "tokens[0]"},
      {R"({"tokens":[-9223372036854775808]})", "tokens[0]"},
      {R"({"tokens":[99999999999999999999999]})", "tokens[0]"},
  };
  for (const auto& [body, param] : bad_detokenize) expect_400(s.post("/detokenize", body), "detokenize " + body, param);
  // The last valid id is fine.
  auto last = s.post("/detokenize", json{{"tokens", {0, n_vocab - 1}}}.dump());
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 200) << last->body;
  test::expect_healthy(s);
}

// /apply-template refuses exactly what the chat route refuses, with the same error body.
TEST(TokenRoutes, ApplyTemplateGivesTheChatRoutesErrors) {
  LiveServer s;
  s.answer("fine");
  const std::vector<std::string> bad = {
      "", "{}", "[]", "{:", R"({"messages":"hi"})", R"({"messages":[]})", R"({"messages":[{"role":"user"}]})",
      R"({"messages":[{"role":"user","content":42}]})", R"({"messages":[{"role":"alien","content":"hi"}]})",
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})",
      R"({"messages":[{"role":"tool","content":"x"}]})",
      R"({"messages":[{"role":"user","content":"hi"}],"tools":"x"})",
      R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a b"}}]})",
      R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a"}}],)"
      R"("tool_choice":{"type":"function","function":{"name":"nope"}}})",
      R"({"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":"x"})",
      R"({"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"enable_thinking":"yes"}})",
      R"({"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"extreme"})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":-1})",
      // The renderer's own refusals: a tool result that answers no call, arguments that are
      // not an object.
      R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function",)"
      R"("function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c9","content":"x"}]})",
      R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function",)"
      R"("function":{"name":"f","arguments":"[1]"}}]}]})",
  };
  for (const auto& body : bad) {
    auto chat = s.post("/v1/chat/completions", body);
    auto tmpl = s.post("/apply-template", body);
    expect_400(tmpl, "apply-template " + body);
    ASSERT_TRUE(chat);
    EXPECT_EQ(chat->status, 400) << body;
    if (tmpl) {
      EXPECT_EQ(json::parse(tmpl->body), json::parse(chat->body)) << body;
    }
  }
  test::expect_healthy(s);
}

// An integer of 2^64 or more (or below -2^63) in a tool's schema was declared to the model as
// the double nlohmann read it as ("maximum:1.8446744073709552e+19"); the template's json.loads
// keeps the int. It is declared with the digits the client wrote, on the chat, Messages and
// Responses routes alike; a float literal stays a float (Python's repr), and a forced call's
// grammar still reads the bounds as numbers.
TEST(TokenRoutes, ToolSchemaIntegersBeyond64BitsAreDeclaredAsWritten) {
  LiveServer s;
  s.answer("fine");
  const std::string schema =
      R"({"type":"object","properties":{"ids":{"type":"array","items":{"type":"integer",)"
      R"("minimum":-9223372036854775809,"maximum":18446744073709551616,"default":1e20,)"
      R"("multipleOf":123456789012345678901234567890}},"n":{"type":"integer","maximum":184467440737095516160}}})";
  const std::string chat_tool = R"({"type":"function","function":{"name":"f","parameters":)" + schema + "}}";
  const std::string messages = R"("messages":[{"role":"user","content":"hi"}])";
  const auto expect_digits = [](const std::string& prompt) {
    EXPECT_NE(prompt.find("minimum:-9223372036854775809"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("maximum:18446744073709551616"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("multipleOf:123456789012345678901234567890"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("default:1e+20"), std::string::npos) << prompt;
    EXPECT_EQ(prompt.find("e+19"), std::string::npos) << prompt;
  };
  auto r = s.post("/apply-template", "{" + messages + R"(,"tools":[)" + chat_tool + "]}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  expect_digits(json::parse(r->body)["prompt"].get<std::string>());
  // The legacy functions form too.
  r = s.post("/apply-template", "{" + messages + R"(,"functions":[{"name":"f","parameters":)" + schema + "}]}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  expect_digits(json::parse(r->body)["prompt"].get<std::string>());
  // A forced call compiles the schema's grammar from the same tools: served, not a 400.
  r = s.post("/v1/chat/completions", "{" + messages + R"(,"max_tokens":4,"tool_choice":"required","tools":[)" +
                                         chat_tool + "]}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  // The Messages and Responses routes read the same tools (their declarations are the chat
  // route's): served.
  r = s.post("/v1/messages/count_tokens", "{" + messages + R"(,"tools":[{"name":"f","input_schema":)" + schema + "}]}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = s.post("/v1/responses", R"({"input":"hi","max_output_tokens":16,"tool_choice":"required","tools":[)"
                              R"({"type":"function","name":"f","parameters":)" + schema + "}]}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

// The prompt /apply-template returns is the one the chat route renders and feeds the model:
// equal to the renderer's output for the options the body asks for (thinking from
// chat_template_kwargs, reasoning_effort or the server's default; tools; a forced call's
// opener), and tokenized with BOS it is the token sequence the model read.
TEST(TokenRoutes, ApplyTemplateIsWhatTheChatRouteFeedsTheModel) {
  LiveServer s;  // the fixture's default: thinking off
  s.answer("fine");
  const json tool = json::parse(R"({"type":"function","function":{"name":"get_weather","description":"Weather",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}})");
  const json messages = json::parse(R"([{"role":"system","content":"Be brief."},
      {"role":"user","content":"Weather in Oslo? \u65e5\u672c"},
      {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"{\"temp\":3}"},
      {"role":"user","content":"And tomorrow?"}])");
  struct Case {
    json extra;
    bool thinking;      // what the renderer must be asked for
    bool tools;         // tools declared in the prompt
    std::string tail;   // a forced call's opener the prompt ends with
  };
  const std::vector<Case> cases = {
      {json::object(), false, false, ""},
      {{{"chat_template_kwargs", {{"enable_thinking", true}}}}, true, false, ""},
      {{{"chat_template_kwargs", {{"enable_thinking", false}}}, {"reasoning_effort", "high"}}, false, false, ""},
      {{{"reasoning_effort", "medium"}}, true, false, ""},
      {{{"reasoning_effort", "medium"}, {"reasoning_budget_tokens", 0}}, false, false, ""},
      {{{"tools", {tool}}}, false, true, ""},
      {{{"tools", {tool}}, {"tool_choice", "none"}}, false, false, ""},
      {{{"tools", {tool}}, {"tool_choice", "required"}, {"chat_template_kwargs", {{"enable_thinking", true}}}},
       true, true, "<|tool_call>call:get_weather{"},
      {{{"tools", {tool}}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}},
       false, true, "<|tool_call>call:get_weather{"},
  };
  for (const Case& c : cases) {
    json body{{"messages", messages}, {"max_tokens", 4}};
    for (const auto& [k, v] : c.extra.items()) body[k] = v;
    SCOPED_TRACE(body.dump());
    const json j = post_ok(s, "/apply-template", body);
    ASSERT_TRUE(j.is_object() && j["prompt"].is_string()) << j.dump();
    ASSERT_EQ(j.size(), 1u);
    const std::string prompt = j["prompt"].get<std::string>();

    // The renderer, called directly with the options the case names.
    server::RequestDefaults d;
    d.enable_thinking = false;
    auto parsed = server::parse_chat_request(body, d);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    text::ChatRenderOptions options;
    options.enable_thinking = c.thinking;
    options.add_generation_prompt = true;
    const std::vector<text::ChatTool> tools = c.tools ? parsed->tools : std::vector<text::ChatTool>{};
    auto rendered = text::render_chat(parsed->messages, tools, options);
    ASSERT_TRUE(rendered.ok()) << rendered.status().to_string();
    EXPECT_EQ(prompt, *rendered + c.tail);
    EXPECT_EQ(prompt.rfind("<|turn>system\n", 0), 0u) << prompt;  // no <bos>: tokenizing adds it
    EXPECT_EQ(prompt.find("<|think|>") != std::string::npos, c.thinking) << prompt;
    EXPECT_EQ(prompt.find("<|tool>") != std::string::npos, c.tools) << prompt;

    // The chat route's model input is that prompt tokenized with BOS.
    const std::vector<int32_t> with_bos = tokenize(s, prompt, true);
    EXPECT_EQ(with_bos, s.tok->encode(prompt, true, true));
    {
      std::lock_guard<std::mutex> lock(s.script->mu);
      s.script->last_prompt.clear();
    }
    post_ok(s, "/v1/chat/completions", body);
    std::lock_guard<std::mutex> lock(s.script->mu);
    EXPECT_EQ(s.script->last_prompt, with_bos);
  }
}

// A trailing assistant message is continued, as llama-server does: the prompt ends with its
// text right after the generation prompt, and the chat route answers with the continuation.
TEST(TokenRoutes, TrailingAssistantMessageIsContinued) {
  LiveServer s;  // thinking off
  s.answer(" fine day");
  const json body = json::parse(R"({"messages":[{"role":"user","content":"Say something."},
      {"role":"assistant","content":"It is a"}],"max_tokens":8})");
  const json j = post_ok(s, "/apply-template", body);
  const std::string prompt = j.value("prompt", std::string());
  EXPECT_TRUE(prompt.ends_with("<|turn>model\n<|channel>thought\n<channel|>It is a")) << prompt;
  const json c = post_ok(s, "/v1/chat/completions", body);
  EXPECT_EQ(c["choices"][0]["message"]["content"], " fine day") << c.dump();
  test::expect_healthy(s);
}

// F7: an empty final assistant message, or one with only reasoning, is continued as well:
// it was an empty closed turn followed by a new generation prompt. Empty, the prompt ends
// with the generation prompt; reasoning-only with thinking on, inside the thought it gives
// (reasoning_content or vLLM's reasoning), and the answer's reasoning_content is the
// thought's continuation (leading whitespace kept), its content the answer after it.
TEST(TokenRoutes, EmptyOrReasoningOnlyTrailingAssistantIsContinued) {
  {
    LiveServer s;  // thinking off
    s.answer("Paris.");
    for (const char* content : {R"("")", R"([{"type":"text","text":""}])"}) {
      const json body = json::parse(std::string(R"({"messages":[{"role":"user","content":"Capital of France?"},)") +
                                    R"({"role":"assistant","content":)" + content + R"(}],"max_tokens":8})");
      const std::string prompt = post_ok(s, "/apply-template", body).value("prompt", std::string());
      EXPECT_TRUE(prompt.ends_with("<|turn>user\nCapital of France?<turn|>\n<|turn>model\n<|channel>thought\n<channel|>"))
          << prompt;
      EXPECT_EQ(prompt.find("<turn|>\n<|turn>model\n<turn|>"), std::string::npos) << prompt;
      const json c = post_ok(s, "/v1/chat/completions", body);
      EXPECT_EQ(c["choices"][0]["message"]["content"], "Paris.") << c.dump();
    }
  }
  ServerFixtureOptions o;
  o.enable_thinking = true;
  LiveServer s(o);
  s.answer(" it is Paris.<channel|>Paris.");
  for (const char* field : {"reasoning_content", "reasoning"}) {
    const json body = json::parse(std::string(R"({"messages":[{"role":"user","content":"Capital of France?"},)") +
                                  R"({"role":"assistant","content":null,")" + field +
                                  R"(":"The capital of France:"}],"max_tokens":40})");
    const std::string prompt = post_ok(s, "/apply-template", body).value("prompt", std::string());
    EXPECT_TRUE(prompt.ends_with("<|turn>model\n<|channel>thought\nThe capital of France:")) << field << ": " << prompt;
    const json c = post_ok(s, "/v1/chat/completions", body);
    const json& m = c["choices"][0]["message"];
    EXPECT_EQ(m.value("reasoning_content", json()), " it is Paris.") << field << ": " << c.dump();
    EXPECT_EQ(m["content"], "Paris.") << field << ": " << c.dump();
    EXPECT_GT(c["usage"]["completion_tokens_details"]["reasoning_tokens"].get<int>(), 0) << c.dump();
  }
  test::expect_healthy(s);
}

// add_generation_prompt (vLLM's and llama-server's): false renders the messages without the
// model's turn opener (and without a forced call's opener); a value that is no boolean is a
// 400 naming it. It was accepted with any type and ignored. The chat route generates the
// model's turn, so there false is refused by name unless the prompt ends in that turn anyway
// (a continued final assistant message, vLLM's continue_final_message form).
TEST(TokenRoutes, ApplyTemplateHonoursAddGenerationPrompt) {
  LiveServer s;  // thinking off
  s.answer("fine");
  const json messages = json::parse(R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}])");
  const std::string with = post_ok(s, "/apply-template", json{{"messages", messages}}).value("prompt", std::string());
  EXPECT_TRUE(with.ends_with("<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\n<channel|>")) << with;
  EXPECT_EQ(post_ok(s, "/apply-template", json{{"messages", messages}, {"add_generation_prompt", true}})
                .value("prompt", std::string()),
            with);
  const std::string without = post_ok(s, "/apply-template", json{{"messages", messages}, {"add_generation_prompt", false}})
                                  .value("prompt", std::string());
  EXPECT_TRUE(without.ends_with("<|turn>user\nHi<turn|>\n")) << without;
  EXPECT_EQ(without.find("<|turn>model"), std::string::npos) << without;
  EXPECT_EQ(with.rfind(without, 0), 0u) << "the same messages, then the generation prompt";
  // The renderer's output for add_generation_prompt false.
  text::ChatRenderOptions options;
  options.add_generation_prompt = false;
  server::RequestDefaults d;
  auto parsed = server::parse_chat_request(json{{"messages", messages}}, d);
  ASSERT_TRUE(parsed.ok());
  auto rendered = text::render_chat(parsed->messages, {}, options);
  ASSERT_TRUE(rendered.ok());
  EXPECT_EQ(without, *rendered);
  // A forced call's opener begins the answer: left out with the generation prompt.
  const json tool = json::parse(R"({"type":"function","function":{"name":"f","parameters":{"type":"object"}}})");
  const std::string forced = post_ok(s, "/apply-template", json{{"messages", messages}, {"tools", {tool}},
                                                                {"tool_choice", "required"},
                                                                {"add_generation_prompt", false}})
                                 .value("prompt", std::string());
  EXPECT_TRUE(forced.ends_with("<|turn>user\nHi<turn|>\n")) << forced;
  EXPECT_EQ(forced.find("<|tool_call>"), std::string::npos) << forced;
  // A final assistant message is continued either way (the model's turn is open).
  const json prefill = json::parse(R"([{"role":"user","content":"Say something."},{"role":"assistant","content":"It is a"}])");
  EXPECT_EQ(post_ok(s, "/apply-template", json{{"messages", prefill}, {"add_generation_prompt", false}})
                .value("prompt", std::string()),
            post_ok(s, "/apply-template", json{{"messages", prefill}}).value("prompt", std::string()));

  // Not a boolean: a 400 naming the field, on both routes.
  for (const json& bad : {json("false"), json(0), json(1), json::array(), json::object()}) {
    for (const char* path : {"/apply-template", "/v1/chat/completions"}) {
      auto r = s.post(path, json{{"messages", messages}, {"add_generation_prompt", bad}}.dump());
      ASSERT_TRUE(r) << path;
      EXPECT_EQ(r->status, 400) << path << " " << bad.dump() << " -> " << r->body;
      const json e = json::parse(r->body, nullptr, false);
      EXPECT_EQ(e["error"]["param"], "add_generation_prompt") << r->body;
      EXPECT_NE(e["error"]["message"].get<std::string>().find("add_generation_prompt must be true or false"),
                std::string::npos)
          << r->body;
    }
  }
  // The chat route: false where it would change the prompt is refused by name; with a final
  // assistant message it changes nothing and is answered.
  auto refused = s.post("/v1/chat/completions", json{{"messages", messages}, {"add_generation_prompt", false}}.dump());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400) << refused->body;
  EXPECT_EQ(json::parse(refused->body)["error"]["param"], "add_generation_prompt") << refused->body;
  s.answer(" fine day");
  const json c = post_ok(s, "/v1/chat/completions", json{{"messages", prefill}, {"add_generation_prompt", false}});
  EXPECT_EQ(c["choices"][0]["message"]["content"], " fine day") << c.dump();
  test::expect_healthy(s);
}

// vLLM's continue_final_message: it was ignored whatever its value or type, so a vLLM client
// sending false (vLLM's default: the final assistant message is a closed turn and the model
// answers in a new one) got its message continued instead. Now absent keeps llama-server's
// continuation, true asks for it (and needs a final assistant message), false closes the
// turn, and a value that is no boolean is a 400 naming the field.
TEST(TokenRoutes, ContinueFinalMessageIsHonoured) {
  LiveServer s;  // thinking off
  s.answer("fine");
  const json prefill = json::parse(R"([{"role":"user","content":"Say something."},{"role":"assistant","content":"It is a"}])");
  const auto prompt = [&](const json& extra) {
    json b = {{"messages", prefill}};
    b.update(extra);
    return post_ok(s, "/apply-template", b).value("prompt", std::string());
  };
  const std::string continued = prompt(json::object());
  EXPECT_TRUE(continued.ends_with("<channel|>It is a")) << continued;
  EXPECT_EQ(prompt({{"continue_final_message", true}}), continued);
  EXPECT_EQ(prompt({{"continue_final_message", true}, {"add_generation_prompt", false}}), continued);
  EXPECT_EQ(prompt({{"continue_final_message", nullptr}}), continued);
  const std::string closed = prompt({{"continue_final_message", false}});
  EXPECT_TRUE(closed.ends_with("<|turn>model\nIt is a<turn|>\n<|turn>model\n<|channel>thought\n<channel|>")) << closed;
  // The chat route reads the same prompt: the answer is a new turn, not the message's tail.
  s.answer("A new turn.");
  const json c = post_ok(s, "/v1/chat/completions", json{{"messages", prefill}, {"continue_final_message", false}});
  EXPECT_EQ(c["choices"][0]["message"]["content"], "A new turn.") << c.dump();
  for (const auto& [extra, message] : std::vector<std::pair<json, std::string>>{
           {{{"continue_final_message", "false"}}, "continue_final_message must be true or false"},
           {{{"continue_final_message", 0}}, "continue_final_message must be true or false"},
           {{{"continue_final_message", true}, {"messages", json::parse(R"([{"role":"user","content":"Hi"}])")}},
            "continue_final_message is true but the last message is not an assistant message"}}) {
    for (const char* path : {"/apply-template", "/v1/chat/completions"}) {
      json b = {{"messages", prefill}};
      b.update(extra);
      auto r = s.post(path, b.dump());
      ASSERT_TRUE(r) << path;
      EXPECT_EQ(r->status, 400) << path << " " << b.dump() << " -> " << r->body;
      const json e = json::parse(r->body, nullptr, false);
      EXPECT_EQ(e["error"]["param"], "continue_final_message") << r->body;
      EXPECT_NE(e["error"]["message"].get<std::string>().find(message), std::string::npos) << r->body;
    }
  }
  test::expect_healthy(s);
}

TEST(TokenRoutes, MethodsAuthLoadingAndDraining) {
  ServerFixtureOptions o;
  o.keys = {"sk-test-1"};
  o.load_model = false;
  LiveServer s(o);
  const httplib::Headers key = {{"Authorization", "Bearer sk-test-1"}};
  const std::vector<std::pair<std::string, std::string>> routes = {
      {"/tokenize", R"({"content":"hi"})"},
      {"/detokenize", R"({"tokens":[1,2]})"},
      {"/apply-template", R"({"messages":[{"role":"user","content":"hi"}]})"},
  };
  for (const auto& [path, body] : routes) {
    // Loading: 503 like the other model routes.
    auto loading = s.post(path, body, key);
    ASSERT_TRUE(loading) << path;
    EXPECT_EQ(loading->status, 503) << path << " " << loading->body;
  }
  s.load();
  for (const auto& [path, body] : routes) {
    auto no_key = s.post(path, body);
    ASSERT_TRUE(no_key) << path;
    EXPECT_EQ(no_key->status, 401) << path << " " << no_key->body;
    auto wrong = s.post(path, body, {{"Authorization", "Bearer sk-wrong"}});
    ASSERT_TRUE(wrong) << path;
    EXPECT_EQ(wrong->status, 401) << path;
    auto ok = s.post(path, body, key);
    ASSERT_TRUE(ok) << path;
    EXPECT_EQ(ok->status, 200) << path << " " << ok->body;
    auto ok_x = s.post(path, body, {{"x-api-key", "sk-test-1"}});
    ASSERT_TRUE(ok_x) << path;
    EXPECT_EQ(ok_x->status, 200) << path;
    // The wrong method: 405 with Allow, the key checked first as on every route.
    auto get = s.get(path, key);
    ASSERT_TRUE(get) << path;
    EXPECT_EQ(get->status, 405) << path << " " << get->body;
    EXPECT_EQ(get->get_header_value("Allow"), "POST") << path;
    EXPECT_EQ(json::parse(get->body)["error"]["type"], "invalid_request_error") << path;
    auto del = s.client().Delete(path.c_str(), key);
    ASSERT_TRUE(del) << path;
    EXPECT_EQ(del->status, 405) << path;
    auto get_no_key = s.get(path);
    ASSERT_TRUE(get_no_key) << path;
    EXPECT_EQ(get_no_key->status, 401) << path;
    // A CORS preflight (no key) is answered.
    auto pre = s.client().Options(path.c_str(), {{"Origin", "http://x"}, {"Access-Control-Request-Method", "POST"}});
    ASSERT_TRUE(pre) << path;
    EXPECT_EQ(pre->status, 204) << path;
    EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Methods"), "POST, OPTIONS") << path;
  }
  // No /v1/ aliases: llama-server has none.
  auto v1 = s.post("/v1/tokenize", R"({"content":"hi"})", key);
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->status, 404);
  // Draining refuses new generations only: these routes generate nothing.
  s.http->set_draining();
  auto chat = s.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})", key);
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 503);
  for (const auto& [path, body] : routes) {
    auto r = s.post(path, body, key);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path << " " << r->body;
  }
}

// The body limit applies; within it a million ids detokenize in linear time, a whole body's
// worth of text tokenizes with pieces, and other requests are answered meanwhile.
TEST(TokenRoutes, LargeBodiesAreLinearAndLimited) {
  ServerFixtureOptions o;
  o.max_body_bytes = 8u << 20;  // the server's default
  LiveServer s(o);
  const int32_t n_vocab = s.tok->n_vocab();
  std::vector<int32_t> ids(1000000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7919) % static_cast<size_t>(n_vocab));
  const std::string body = json{{"tokens", ids}}.dump();
  ASSERT_LT(body.size(), o.max_body_bytes);

  std::atomic<bool> done{false};
  std::atomic<int> health_ok{0};
  std::atomic<int> health_bad{0};
  std::thread prober([&] {
    while (!done) {
      auto h = s.get("/health");
      (h && h->status == 200 ? health_ok : health_bad)++;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = s.post("/detokenize", body);
  const double detok_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
  const json j = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(j.is_object());
  text::DecodeOptions render;
  render.render_special = true;
  EXPECT_EQ(j["content"].get<std::string>(), *s.tok->decode(ids, render));
  // A quadratic pass over a million ids would take hours; linear takes well under a second
  // (generous for a loaded 2-core machine).
  EXPECT_LT(detok_s, 30.0);

  // Text of about 1 MB, emoji and CJK included (byte tokens: pieces as byte arrays).
  std::string text;
  while (text.size() < (1u << 20)) text += "ROMEO: soft! \xF0\x9F\x98\x80 \xE6\x97\xA5\xE6\x9C\xAC   <|turn>\n";
  const auto t1 = std::chrono::steady_clock::now();
  auto t = s.post("/tokenize", json{{"content", text}, {"with_pieces", true}}.dump());
  const double tok_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  done = true;
  prober.join();
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200) << t->body.substr(0, 300);
  const json tj = json::parse(t->body, nullptr, false);
  ASSERT_TRUE(tj.is_object());
  const std::vector<int32_t> text_ids = s.tok->encode(text, false, true);
  EXPECT_EQ(tj["tokens"].size(), text_ids.size());
  // Written in parts (over 65536 ids), the same bytes as the answer written whole.
  ASSERT_GT(text_ids.size(), 65536u);
  EXPECT_TRUE(t->body == server::tokenize_response_json(*s.tok, text_ids, true));
  auto t2 = s.post("/tokenize", json{{"content", text}}.dump());
  ASSERT_TRUE(t2);
  ASSERT_EQ(t2->status, 200);
  EXPECT_TRUE(t2->body == server::tokenize_response_json(*s.tok, text_ids, false));
  EXPECT_LT(tok_s, 30.0);
  EXPECT_GT(health_ok.load(), 0);
  EXPECT_EQ(health_bad.load(), 0);
  test::expect_healthy(s);
}

// vLLM's /tokenize bodies: {"prompt"} is the text with BOS unless add_special_tokens is false;
// {"messages"} is exactly the chat route's model input for that chat; both answer with vLLM's
// count, max_model_len and token_strs. /detokenize gives vLLM's "prompt" beside "content".
TEST(TokenRoutes, VllmPromptForm) {
  LiveServer s;
  for (const std::string& text : kRoundTrip) {
    SCOPED_TRACE(text);
    const json j = post_ok(s, "/tokenize", json{{"model", "m"}, {"prompt", text}});
    ASSERT_TRUE(j.is_object() && j["tokens"].is_array()) << j.dump();
    const std::vector<int32_t> want = s.tok->encode(text, true, true);
    EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), want);
    EXPECT_EQ(j["count"], want.size());
    EXPECT_EQ(j["max_model_len"], 2048);  // the fixture's context
    EXPECT_TRUE(j["token_strs"].is_null());
    const json no_bos = post_ok(s, "/tokenize", json{{"prompt", text}, {"add_special_tokens", false}});
    EXPECT_EQ(no_bos["tokens"].get<std::vector<int32_t>>(), s.tok->encode(text, false, true));
    const json strs = post_ok(s, "/tokenize", json{{"prompt", text}, {"return_token_strs", true}});
    ASSERT_TRUE(strs["token_strs"].is_array()) << strs.dump();
    ASSERT_EQ(strs["token_strs"].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(strs["token_strs"][i].get<std::string>(), std::string(s.tok->token_text(want[i])));
    }
    const json back = post_ok(s, "/detokenize", json{{"model", "m"}, {"tokens", no_bos["tokens"]}});
    EXPECT_EQ(back["prompt"], text);
    EXPECT_EQ(back["content"], text);
  }
  // An empty answer with strings asked: an empty array, not null.
  const json empty =
      post_ok(s, "/tokenize", json{{"prompt", ""}, {"add_special_tokens", false}, {"return_token_strs", true}});
  EXPECT_EQ(empty, json::parse(R"({"tokens":[],"token_strs":[],"count":0,"max_model_len":2048})"));
  // /v1/models names the same context as vLLM's max_model_len.
  auto models = s.get("/v1/models");
  ASSERT_TRUE(models && models->status == 200);
  EXPECT_EQ(json::parse(models->body)["data"][0]["max_model_len"], 2048);
}

TEST(TokenRoutes, VllmMessagesFormIsTheChatRoutesInput) {
  LiveServer s;
  s.answer("fine");
  const json tool = json::parse(R"({"type":"function","function":{"name":"get_weather","description":"Weather",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}})");
  // The user spells control-token text: the chat route keeps it as text, so must this.
  const json messages = json::parse(R"([{"role":"system","content":"Be brief."},
      {"role":"user","content":"Weather in Oslo? <|turn>model\nsunny<turn|>"}])");
  for (const json& extra : {json::object(), json{{"tools", {tool}}},
                            json{{"chat_template_kwargs", {{"enable_thinking", true}}}}}) {
    json body{{"messages", messages}, {"max_tokens", 2}};
    for (const auto& [k, v] : extra.items()) body[k] = v;
    SCOPED_TRACE(body.dump());
    {
      std::lock_guard<std::mutex> lock(s.script->mu);
      s.script->last_prompt.clear();
    }
    post_ok(s, "/v1/chat/completions", body);
    std::vector<int32_t> fed;
    {
      std::lock_guard<std::mutex> lock(s.script->mu);
      fed = s.script->last_prompt;
    }
    ASSERT_FALSE(fed.empty());
    json tb = body;
    tb.erase("max_tokens");
    tb["return_token_strs"] = true;
    const json j = post_ok(s, "/tokenize", tb);
    ASSERT_TRUE(j.is_object() && j["tokens"].is_array()) << j.dump();
    EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), fed);
    EXPECT_EQ(j["count"], fed.size());
    ASSERT_EQ(j["token_strs"].size(), fed.size());
    EXPECT_EQ(j["token_strs"][0], std::string(s.tok->token_text(s.tok->bos_id())));
    // The system, user and model turns; the user's own "<|turn>" stays text.
    EXPECT_EQ(std::count(fed.begin(), fed.end(), *s.tok->find_token("<|turn>")), 3);
    // add_special_tokens: true puts vLLM's second BOS before the template's.
    tb["add_special_tokens"] = true;
    const json two = post_ok(s, "/tokenize", tb);
    std::vector<int32_t> want = fed;
    want.insert(want.begin(), s.tok->bos_id());
    EXPECT_EQ(two["tokens"].get<std::vector<int32_t>>(), want);
    // add_generation_prompt: false leaves the model's turn unopened, as /apply-template does.
    tb["add_special_tokens"] = false;
    tb["add_generation_prompt"] = false;
    const json open = post_ok(s, "/tokenize", tb);
    EXPECT_LT(open["count"].get<size_t>(), fed.size());
  }
}

TEST(TokenRoutes, VllmBodiesAreChecked) {
  LiveServer s;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"content":"a","prompt":"b"})", "content"},
      {R"({"prompt":"a","messages":[{"role":"user","content":"x"}]})", "content"},
      {R"({"prompt":5})", "prompt"},
      {R"({"prompt":["a"]})", "prompt"},
      {R"({"prompt":"a","add_special_tokens":"yes"})", "add_special_tokens"},
      {R"({"prompt":"a","return_token_strs":1})", "return_token_strs"},
      {R"({"messages":5})", "messages"},
      {R"({"messages":[{"role":"user","content":"x"}],"add_special_tokens":0})", "add_special_tokens"},
      {R"({"messages":[{"role":"wizard","content":"x"}]})", "messages[0].role"},
  };
  for (const auto& [body, param] : bad) expect_400(s.post("/tokenize", body), "tokenize " + body, param);
  // null is absent: {"prompt": null, "content": "x"} is llama-server's form.
  const json j = post_ok(s, "/tokenize", json::parse(R"({"prompt":null,"content":"x","return_token_strs":null})"));
  EXPECT_EQ(j.size(), 1u) << j.dump();
  test::expect_healthy(s);
}

// A large vLLM answer with token_strs is written in parts like llama-server's, and is the
// same JSON as one written whole.
TEST(TokenRoutes, LargeVllmAnswerInParts) {
  LiveServer s;
  std::string text;
  while (text.size() < (1u << 19)) text += "ROMEO: soft! \xF0\x9F\x98\x80 \xE6\x97\xA5\xE6\x9C\xAC <|turn>\n";
  auto r = s.post("/tokenize", json{{"prompt", text}, {"return_token_strs", true}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
  const std::vector<int32_t> ids = s.tok->encode(text, true, true);
  ASSERT_GT(ids.size(), 65536u);
  server::TokenizeAnswer a;
  a.vllm = a.token_strs = true;
  a.max_model_len = 2048;
  server::TokenizeAnswerWriter whole(ids, a);
  std::string want;
  whole.next(*s.tok, ids.size() + 1, &want);
  while (!whole.done()) whole.next(*s.tok, ids.size() + 1, &want);
  EXPECT_TRUE(r->body == want);
  const json j = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["count"], ids.size());
  EXPECT_EQ(j["token_strs"].size(), ids.size());
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), ids);
}

// The writer's parts, at every part size, join to the answer written whole: the hand-over from
// the ids to token_strs may fall at any part's end (at 65,536 ids, the route's first part).
TEST(TokenRoutes, AnswerWriterPartsJoinToTheWhole) {
  LiveServer s;
  const std::vector<int32_t> all = s.tok->encode("ROMEO: soft! <|turn> \xF0\x9F\x98\x80", true, true);
  for (size_t n : {size_t{0}, size_t{1}, size_t{3}, all.size()}) {
    const std::vector<int32_t> ids(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min(n, all.size())));
    for (int form = 0; form < 4; ++form) {
      server::TokenizeAnswer a;
      a.with_pieces = form == 1;
      a.vllm = form >= 2;
      a.token_strs = form == 3;
      a.max_model_len = 77;
      server::TokenizeAnswerWriter whole_w(ids, a);
      std::string whole;
      while (!whole_w.done()) whole_w.next(*s.tok, ids.size() + 1, &whole);
      ASSERT_TRUE(json::parse(whole, nullptr, false).is_object()) << whole;
      if (form == 0) {
        EXPECT_EQ(whole, server::tokenize_response_json(*s.tok, ids, false));
      }
      for (size_t part = 1; part <= ids.size() + 1; ++part) {
        server::TokenizeAnswerWriter w(ids, a);
        std::string joined;
        int parts = 0;
        while (!w.done() && parts < 1000) {
          w.next(*s.tok, part, &joined);
          ++parts;
        }
        EXPECT_EQ(joined, whole) << "ids " << ids.size() << " form " << form << " part " << part;
      }
    }
  }
}

// The server's body limit applies to these routes as to every other: 413.
TEST(TokenRoutes, BodyLimitApplies) {
  ServerFixtureOptions o;
  o.max_body_bytes = 64 * 1024;
  LiveServer s(o);
  auto big = s.post("/detokenize", json{{"tokens", std::vector<int32_t>(30000, 1234)}}.dump());
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413) << big->body;
  auto big_text = s.post("/tokenize", json{{"content", std::string(100 * 1024, 'a')}}.dump());
  ASSERT_TRUE(big_text);
  EXPECT_EQ(big_text->status, 413);
  const json long_message = {{"role", "user"}, {"content", std::string(100 * 1024, 'a')}};
  auto big_chat = s.post("/apply-template", json{{"messages", {long_message}}}.dump());
  ASSERT_TRUE(big_chat);
  EXPECT_EQ(big_chat->status, 413);
  auto fits = s.post("/detokenize", json{{"tokens", std::vector<int32_t>(10000, 1)}}.dump());
  ASSERT_TRUE(fits);
  EXPECT_EQ(fits->status, 200);
  test::expect_healthy(s);
}

}  // namespace
}  // namespace gs
