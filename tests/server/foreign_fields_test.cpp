// Other servers' fields that change the answer (vLLM's include_stop_str_in_output,
// prompt_logprobs, use_beam_search, skip_special_tokens, structured_outputs, chat echo,
// chat_template, truncate_prompt_tokens; llama-server's n_probs). Before, every one was
// ignored whatever its value or type: `{"prompt":"ROMEO:","stop":["wilt"],
// "include_stop_str_in_output":true}` came back without the stop string, and
// `{"structured_outputs":{"json":{"type":"integer"}}}` came back as free text. Now each is
// accepted where it changes nothing, read where this server can honour it
// (structured_outputs.json) and refused by name otherwise (decision 0010).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/api_request.h"
#include "server/shakes_http.h"

namespace gs {
namespace {

using json = nlohmann::json;
using server::RequestDefaults;

Status chat(const json& extra) {
  json body = json::parse(R"({"messages":[{"role":"user","content":"hi"}]})");
  body.update(extra);
  RequestDefaults d;
  d.n_vocab = 100;
  return server::parse_chat_request(body, d).status();
}

Status completion(const json& extra) {
  json body{{"prompt", "x"}};
  body.update(extra);
  RequestDefaults d;
  d.n_vocab = 100;
  return server::parse_completion_request(body, d).status();
}

TEST(ForeignFields, NeutralValuesAreAccepted) {
  const json neutral = json::parse(R"({"include_stop_str_in_output": false, "use_beam_search": false,
      "skip_special_tokens": true, "spaces_between_special_tokens": false, "return_tokens_as_token_ids": false,
      "n_probs": 0, "prompt_logprobs": null, "truncate_prompt_tokens": null, "return_token_ids": false,
      "logits_processors": [],
      "structured_outputs": {"disable_any_whitespace": true, "json_object": false}})");
  EXPECT_TRUE(chat(neutral).ok()) << chat(neutral).to_string();
  EXPECT_TRUE(completion(neutral).ok()) << completion(neutral).to_string();
  EXPECT_TRUE(chat({{"echo", false}, {"chat_template", ""}}).ok());
  EXPECT_TRUE(completion({{"echo", true}}).ok());  // the completions route's own echo
}

TEST(ForeignFields, ValuesThatWouldChangeTheAnswerAreRefusedByName) {
  const std::vector<json> both = {
      {{"include_stop_str_in_output", true}}, {{"use_beam_search", true}},      {{"skip_special_tokens", false}},
      {{"return_tokens_as_token_ids", true}}, {{"n_probs", 5}},                 {{"prompt_logprobs", 0}},
      {{"truncate_prompt_tokens", 10}},       {{"structured_outputs", {{"regex", "a+"}}}},
      {{"structured_outputs", {{"choice", json::array({"a", "b"})}}}},
      // vLLM's token ids beside the text (prompt_token_ids, token_ids) and its request-level
      // logits processors were dropped without a word (decision 0060).
      {{"return_token_ids", true}},           {{"logits_processors", json::array({"my.module.Processor"})}}};
  for (const json& extra : both) {
    const std::string field = extra.begin().key();
    for (const Status& st : {chat(extra), completion(extra)}) {
      EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << extra.dump() << ": " << st.to_string();
      EXPECT_EQ(st.message().rfind(field, 0), 0u) << st.message();
      EXPECT_NE(st.message().find("not supported"), std::string::npos) << st.message();
      EXPECT_EQ(server::error_param(st.message()).rfind(field, 0), 0u) << st.message();
    }
  }
  for (const json& extra : {json{{"echo", true}}, json{{"chat_template", "{{ messages }}"}}}) {
    const Status st = chat(extra);
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << extra.dump() << ": " << st.to_string();
    EXPECT_EQ(server::error_param(st.message()), extra.begin().key()) << st.message();
  }
  // Wrong types are a 400 naming the field.
  for (const json& extra : {json{{"include_stop_str_in_output", "yes"}}, json{{"n_probs", 1.5}},
                            json{{"structured_outputs", "x"}}, json{{"skip_special_tokens", 1}},
                            json{{"return_token_ids", "yes"}}, json{{"logits_processors", "x"}}}) {
    const Status st = chat(extra);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << extra.dump() << ": " << st.to_string();
    EXPECT_EQ(server::error_param(st.message()), extra.begin().key()) << st.message();
  }
}

// OpenAI's own chat fields that ask for output this server does not make: audio output
// (modalities with "audio", audio) and a web search (web_search_options). Before
// (helper-break14) they were ignored, and the client got text only, or an answer made
// without a search, as if it were what it asked for.
TEST(ForeignFields, AudioOutputAndWebSearchAreRefusedByName) {
  EXPECT_TRUE(chat({{"modalities", json::array({"text"})}}).ok());
  EXPECT_TRUE(chat({{"modalities", nullptr}, {"audio", nullptr}, {"web_search_options", nullptr}}).ok());
  for (const json& extra : {json{{"modalities", json::array({"text", "audio"})}},
                            json{{"audio", {{"voice", "alloy"}, {"format", "wav"}}}},
                            json{{"web_search_options", json::object()}},
                            json{{"web_search_options", {{"search_context_size", "low"}}}}}) {
    const Status st = chat(extra);
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << extra.dump() << ": " << st.to_string();
    EXPECT_EQ(server::error_param(st.message()), extra.begin().key()) << st.message();
  }
  for (const json& extra : {json{{"modalities", "text"}}, json{{"modalities", json::array({5})}}}) {
    const Status st = chat(extra);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << extra.dump() << ": " << st.to_string();
    EXPECT_EQ(server::error_param(st.message()).rfind("modalities", 0), 0u) << st.message();
  }
}

// llama-server's generation options that change the answer: a time limit on generation
// (t_max_predict_ms), a stop at a shallower indentation (n_indent), several completions by
// its own name (n_cmpl), LoRA adapters (lora) and log-probabilities after the sampler chain
// (post_sampling_probs). Each was ignored whatever its value or type: {"t_max_predict_ms": 1}
// ran to max_tokens, {"n_cmpl": 3} gave one completion, {"lora": [{"id": 0, "scale": 1}]}
// answered without the adapter, and the logprobs of {"post_sampling_probs": true} were the
// model's own. Now they pass where they change nothing, are refused by name otherwise, and a
// wrong type is a 400 naming the field, on the chat and completions routes alike.
TEST(ForeignFields, LlamaServerGenerationOptionsThatChangeTheAnswerAreRefused) {
  const json neutral = json::parse(R"({"t_max_predict_ms": 0, "n_indent": 0, "n_cmpl": 1, "lora": [],
      "post_sampling_probs": false})");
  EXPECT_TRUE(chat(neutral).ok()) << chat(neutral).to_string();
  EXPECT_TRUE(completion(neutral).ok()) << completion(neutral).to_string();
  EXPECT_TRUE(chat({{"t_max_predict_ms", -1}}).ok());  // llama-server's "no limit" too
  const std::vector<json> refused = {{{"t_max_predict_ms", 500}},
                                     {{"n_indent", 4}},
                                     {{"n_cmpl", 2}},
                                     {{"lora", json::array({{{"id", 0}, {"scale", 1.0}}})}},
                                     {{"post_sampling_probs", true}}};
  for (const json& extra : refused) {
    const std::string field = extra.begin().key();
    for (const Status& st : {chat(extra), completion(extra)}) {
      EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << extra.dump() << ": " << st.to_string();
      EXPECT_NE(st.message().find("not supported"), std::string::npos) << st.message();
      EXPECT_EQ(server::error_param(st.message()), field) << st.message();
    }
  }
  const std::vector<json> wrong = {{{"t_max_predict_ms", "5"}}, {{"t_max_predict_ms", -2}}, {{"n_indent", -1}},
                                   {{"n_indent", 1.5}},        {{"n_cmpl", 0}},              {{"lora", "x"}},
                                   {{"lora", json::array({5})}}, {{"post_sampling_probs", 1}}};
  for (const json& extra : wrong) {
    for (const Status& st : {chat(extra), completion(extra)}) {
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << extra.dump() << ": " << st.to_string();
      EXPECT_EQ(server::error_param(st.message()).rfind(extra.begin().key(), 0), 0u) << st.message();
    }
  }
}

// The fields of this server's other routes, sent to a route that does not read them, were
// dropped without a word: {"system": "..."} or {"instructions": "..."} on /v1/chat/completions
// answered without the system prompt, {"max_output_tokens": 2} wrote up to the default,
// {"stop_sequences": [...]} did not stop, {"thinking": {"type": "disabled"}} or
// {"reasoning": {"effort": "none"}} thought anyway, {"text": {"format": ...}} gave free text;
// on /v1/completions {"messages": [...]} and {"tools": [...]} were ignored beside the prompt.
// (The translated routes already refused the chat route's fields: check_unread_chat_fields.)
// Each is refused by name (400, code unsupported), naming the route that reads it and this
// route's own field where there is one; neutral values (null, "", [], {}) pass.
TEST(ForeignFields, OtherRoutesFieldsAreRefusedByName) {
  struct Case {
    json extra;
    std::string owner;
    std::string chat_instead;        // "" when the chat route reads it or has none
    std::string completion_instead;  // the same for /v1/completions; "-" when it reads it
  };
  const std::vector<Case> cases = {
      {{{"system", "Be terse."}}, "/v1/messages", "a system message", "prompt"},
      {{{"stop_sequences", json::array({"e"})}}, "/v1/messages", "stop", "stop"},
      {{{"thinking", {{"type", "disabled"}}}}, "/v1/messages", "reasoning_effort", ""},
      // Anthropic's structured output (decision 0060), once the Messages route read it.
      {{{"output_config", {{"format", {{"type", "json_schema"}, {"schema", {{"type", "object"}}}}}}}},
       "/v1/messages",
       "response_format",
       "response_format"},
      {{{"output_format", {{"type", "json_schema"}, {"schema", {{"type", "object"}}}}}},
       "/v1/messages",
       "response_format",
       "response_format"},
      {{{"input", "hi"}}, "/v1/responses", "messages", "prompt"},
      {{{"instructions", "Be terse."}}, "/v1/responses", "a system message", "prompt"},
      {{{"max_output_tokens", 2}}, "/v1/responses", "max_tokens", "max_tokens"},
      {{{"text", {{"format", {{"type", "json_object"}}}}}}, "/v1/responses", "response_format", "response_format"},
      {{{"reasoning", {{"effort", "none"}}}}, "/v1/responses", "reasoning_effort", ""},
      {{{"previous_response_id", "resp_1"}}, "/v1/responses", "", ""},
  };
  for (const Case& c : cases) {
    const std::string field = c.extra.begin().key();
    for (const bool on_chat : {true, false}) {
      SCOPED_TRACE(field + (on_chat ? " on chat" : " on completions"));
      const Status st = on_chat ? chat(c.extra) : completion(c.extra);
      EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << st.to_string();
      EXPECT_EQ(st.message().rfind(field + " is a " + c.owner + " field, not read on ", 0), 0u) << st.message();
      const std::string& instead = on_chat ? c.chat_instead : c.completion_instead;
      if (!instead.empty()) {
        EXPECT_NE(st.message().find(": send "), std::string::npos) << st.message();
        EXPECT_NE(st.message().find(instead), std::string::npos) << st.message();
      }
      EXPECT_EQ(server::error_param(st.message()), field) << st.message();
    }
  }
  // The chat route's own fields on /v1/completions, and /v1/completions' on the chat route.
  const std::vector<std::pair<json, std::string>> completion_refuses = {
      {{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}}, "send prompt"},
      {{{"tools", json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}})}}, ""},
      {{{"tool_choice", "required"}}, ""},
      {{{"reasoning_effort", "none"}}, ""},
      {{{"chat_template_kwargs", {{"enable_thinking", false}}}}, ""},
      {{{"reasoning_budget_tokens", 10}}, ""}};
  for (const auto& [extra, instead] : completion_refuses) {
    const Status st = completion(extra);
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << extra.dump() << ": " << st.to_string();
    EXPECT_EQ(st.message().rfind(extra.begin().key() + " is a /v1/chat/completions field", 0), 0u) << st.message();
    if (!instead.empty()) {
      EXPECT_NE(st.message().find(instead), std::string::npos) << st.message();
    }
    EXPECT_EQ(server::error_param(st.message()), extra.begin().key()) << st.message();
  }
  for (const json& extra : {json{{"prompt", "ROMEO:"}}, json{{"suffix", "x"}}}) {
    const Status st = chat(extra);
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << extra.dump() << ": " << st.to_string();
    EXPECT_EQ(st.message().rfind(extra.begin().key() + " is a /v1/completions field", 0), 0u) << st.message();
  }
  // Neutral values pass on both routes.
  const json neutral = json::parse(R"({"system": null, "stop_sequences": [], "thinking": null, "input": "",
      "instructions": "", "max_output_tokens": null, "text": {}, "reasoning": null, "previous_response_id": null,
      "output_config": {}, "output_format": null})");
  EXPECT_TRUE(chat(neutral).ok()) << chat(neutral).to_string();
  EXPECT_TRUE(completion(neutral).ok()) << completion(neutral).to_string();
  EXPECT_TRUE(chat({{"prompt", nullptr}, {"suffix", ""}}).ok());
  EXPECT_TRUE(completion({{"messages", json::array()}, {"tools", json::array()}, {"tool_choice", nullptr},
                          {"chat_template_kwargs", json::object()}})
                  .ok());
  // A reasoning budget of -1 (llama-server's "unlimited") asks for nothing on a route without one.
  const json unlimited = {{"reasoning_budget_tokens", -1}, {"thinking_budget_tokens", -1}};
  EXPECT_TRUE(completion(unlimited).ok()) << completion(unlimited).to_string();
  EXPECT_EQ(completion({{"thinking_budget_tokens", -2}}).code(), StatusCode::kUnimplemented);
}

// Breaker round 28: the chat route's top_logprobs on /v1/completions was dropped unread, so
// {"prompt":"ROMEO:","top_logprobs":3} came back with "logprobs": null, the alternatives asked
// for silently missing. It is a chat field that route does not read: a 400 naming it and the
// route's own count (logprobs). 0 asks nothing and passes, as null does.
TEST(ForeignFields, TopLogprobsIsAChatFieldOnCompletions) {
  for (const json& extra : {json{{"top_logprobs", 3}}, json{{"top_logprobs", 20}},
                            json{{"logprobs", 2}, {"top_logprobs", 2}}, json{{"top_logprobs", "3"}}}) {
    const Status st = completion(extra);
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << extra.dump() << ": " << st.to_string();
    EXPECT_EQ(st.message().rfind("top_logprobs is a /v1/chat/completions field, not read on /v1/completions", 0), 0u)
        << st.message();
    EXPECT_NE(st.message().find("send logprobs"), std::string::npos) << st.message();
    EXPECT_EQ(server::error_param(st.message()), "top_logprobs") << st.message();
  }
  for (const json& extra : {json{{"top_logprobs", 0}}, json{{"top_logprobs", nullptr}},
                            json{{"logprobs", 2}, {"top_logprobs", 0}}}) {
    EXPECT_TRUE(completion(extra).ok()) << extra.dump() << ": " << completion(extra).to_string();
  }
  // The chat route reads it as before.
  EXPECT_TRUE(chat({{"logprobs", true}, {"top_logprobs", 3}}).ok());
}

TEST(ForeignFields, StructuredOutputsJsonIsTheSchema) {
  RequestDefaults d;
  d.n_vocab = 100;
  json body = json::parse(R"({"prompt":"x","structured_outputs":{"json":{"type":"integer"}}})");
  auto parsed = server::parse_completion_request(body, d);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(parsed->gen.json_grammar);
  body["structured_outputs"]["json"] = R"({"type":"integer"})";  // a JSON string, as guided_json takes
  parsed = server::parse_completion_request(body, d);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(parsed->gen.json_grammar);
  body["structured_outputs"] = {{"json_object", true}};
  parsed = server::parse_completion_request(body, d);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(parsed->gen.json_grammar);
  // Two constraints on one output, and a broken schema, are 400s naming the field.
  body["structured_outputs"] = {{"json", {{"type", "integer"}}}};
  body["guided_json"] = {{"type", "string"}};
  parsed = server::parse_completion_request(body, d);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(server::error_param(parsed.status().message()), "structured_outputs.json") << parsed.status().message();
  body.erase("guided_json");
  body["structured_outputs"] = {{"json", {{"type", "string"}, {"minLength", 3}, {"maxLength", 1}}}};
  parsed = server::parse_completion_request(body, d);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(server::error_param(parsed.status().message()).rfind("structured_outputs.json", 0), 0u)
      << parsed.status().message();
}

// Over HTTP on the shakes model: the schema holds, and a refusal is a 400 with param.
TEST(ForeignFields, OverHttp) {
  test::ShakesHttp server;
  server.start(false);
  auto r = server.post(json{{"messages", json::array({{{"role", "user"}, {"content", "ROMEO:"}}})},
                            {"reasoning_effort", "none"},
                            {"max_tokens", 30},
                            {"structured_outputs", {{"json", {{"type", "integer"}, {"minimum", 1}, {"maximum", 9}}}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json choice = json::parse(r->body)["choices"][0];
  const json value = json::parse(choice["message"]["content"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(value.is_number_integer()) << r->body;
  EXPECT_TRUE(value.get<int>() >= 1 && value.get<int>() <= 9) << r->body;
  auto refused = server.post(json{{"messages", json::array({{{"role", "user"}, {"content", "ROMEO:"}}})},
                                  {"stop", json::array({"wilt"})},
                                  {"include_stop_str_in_output", true}});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400) << refused->body;
  EXPECT_EQ(json::parse(refused->body)["error"]["param"], "include_stop_str_in_output") << refused->body;
  server.stop();
}

}  // namespace
}  // namespace gs
