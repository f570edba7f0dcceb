// OpenAI Responses API request bodies (POST /v1/responses) translated into the chat route's
// typed request, so that they take the chat route's one path (render, tokenize, engine,
// output parser). Stateless: nothing is stored, so previous_response_id, conversation and
// background are refused. Every error names the field at fault in the client's own terms
// ("input[2].content[0].type ..."): 400 invalid_request_error. Decision 0032.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "server/api_request.h"
#include "text/json_grammar_cache.h"

namespace gs::server {

// A Responses body as the chat completions body it stands for, and where each chat
// message came from (for errors): `message_paths[k]` is the Responses field of messages[k]
// ("instructions", "input", "input[3]"), `call_paths[k][n]` that of its tool_calls[n]
// ("input[4]", a function_call item).
struct ResponsesTranslation {
  nlohmann::json chat_body;
  std::vector<std::string> message_paths;
  std::vector<std::vector<std::string>> call_paths;
  // Not OK when a function_call item has no function_call_output (OpenAI's "No tool output
  // found for function call"): parse_responses_request reports it after the chat parser's
  // checks, which name a fault of the items themselves more precisely.
  Status unanswered_call;
  // `max_tool_calls` (an integer >= 1), read once here; nullopt when absent or null.
  std::optional<int32_t> max_tool_calls;

  // `status` with a leading chat path ("messages[2].content", "tools[0].function.name",
  // "max_tokens", "response_format.json_schema.schema") renamed to the Responses field it
  // came from ("input[3].content", "tools[0].name", "max_output_tokens", "text.format.schema"),
  // and later mentions of a message ("messages[1]") too. Other statuses are as they are.
  Status rename_error(const Status& status) const;

 private:
  bool is_tool_message(size_t k) const;
};

// The translation of a Responses body:
// - `instructions` (a string) is a leading system message;
// - `input` is a string (one user message) or a list of items: messages {role: user | system
//   | developer | assistant, content: a string or parts input_text / output_text / text /
//   refusal} (images, files and audio refused: this server reads text only);
//   `function_call` {call_id, name, arguments} items join the assistant turn before them (or
//   make one); `function_call_output` {call_id, output: a string or input_text parts} items
//   are tool messages, each answering a function_call item before it and placed right after
//   that call's turn (whatever came between); every call needs its output; a `reasoning` item's text (content reasoning_text, else its summary)
//   is the reasoning of the assistant turn that follows it (dropped when none does); other
//   item types are refused by name;
// - `tools`: function tools {type: "function", name, description, parameters, strict}; other
//   tool types (web_search, file_search, mcp, ...) are refused by name; `tool_choice` "auto" |
//   "none" | "required" | {type: "function", name}; `parallel_tool_calls`; `max_tool_calls`
//   (an integer >= 1) is read here (ResponsesTranslation::max_tool_calls) and set on the chat
//   request by parse_responses_request: the output ends after that many function calls;
// - `max_output_tokens` (an integer >= 16, OpenAI's minimum for this API) is max_tokens; `temperature`, `top_p` (and the extensions top_k,
//   min_p, seed, presence_penalty, frequency_penalty, repetition_penalty, speculative,
//   draft_max) as in chat; `stream`;
// - `reasoning.effort` is reasoning_effort ("none" turns thinking off);
// - `text.format` {type: text | json_object | json_schema (name, schema, strict)} is
//   response_format;
// - `previous_response_id`, `conversation`, `prompt` and `background: true` are refused
//   (nothing is stored); `store`, `metadata`, `user`, `include`, `truncation`, `service_tier`
//   and fields this server does not know are not used.
// Errors: kInvalidArgument naming the field.
Result<ResponsesTranslation> translate_responses_request(const nlohmann::json& body);

// A parsed Responses request: the chat request to run and the request fields the response
// object echoes (instructions, tools, tool_choice, temperature, top_p, max_output_tokens,
// parallel_tool_calls, max_tool_calls, text, reasoning, metadata, store (false: nothing is kept),
// truncation, user, previous_response_id (null), background (false)).
struct ResponsesRequest {
  ChatCompletionRequest chat;
  nlohmann::json echo = nlohmann::json::object();
  ResponsesTranslation translation;  // for renaming the errors of the later steps (planning)
};

// translate_responses_request, then the chat route's parse_chat_request on the result, its
// errors renamed to the Responses fields (text.format's schema compiles as response_format's,
// through `grammar_cache` when given). Errors: kInvalidArgument naming the field.
Result<ResponsesRequest> parse_responses_request(const nlohmann::json& body, const RequestDefaults& defaults,
                                                 text::JsonGrammarCache* grammar_cache = nullptr);

// The Responses request field that an error message begins with, as OpenAI's error.param
// ("input[2].content", "max_output_tokens", "text.format.schema"); "" when the message
// begins with no field of a Responses request.
std::string responses_error_param(std::string_view message);

}  // namespace gs::server
