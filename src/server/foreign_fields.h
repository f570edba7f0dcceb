// Other servers' request fields (vLLM's, llama-server's) that change what a client gets back
// and that this server does not implement: accepted at the value that changes nothing,
// refused by name otherwise, never silently ignored (decision 0010, "Other servers' fields").
#pragma once

#include <nlohmann/json.hpp>

#include <span>
#include <string_view>

#include "core/status.h"

namespace gs::server {

// Checks `body` (a chat completion body when `chat`, else a text completion body). Absent
// or null fields pass. Accepted values: include_stop_str_in_output false,
// use_beam_search false, skip_special_tokens true, spaces_between_special_tokens a boolean,
// return_tokens_as_token_ids false, return_token_ids false, logits_processors [] (vLLM's),
// n_probs 0, chat_template "" (chat), echo false (chat:
// vLLM's echo of the last message; /v1/completions reads its own echo), modalities ["text"]
// (chat). Refused, whatever their value: prompt_logprobs, truncate_prompt_tokens, and on chat
// OpenAI's audio and web_search_options (text only, no web search). Errors: kInvalidArgument for a value
// of the wrong type, kUnimplemented ("... is not supported by this server") for a value
// that would change the answer; both name the field first.
Status check_foreign_fields(const nlohmann::json& body, bool chat);

// A chat completion field that a translated route names otherwise ("max_tokens" is
// "max_output_tokens" on /v1/responses).
struct FieldRename {
  std::string_view field;
  std::string_view instead;
};

// The routes that translate their own API into a chat request (/v1/messages, /v1/responses)
// read their own fields; a field of the chat route (chat_request_field_names(), the token
// routes' fields aside) that such a route does not read (`read_here`) would be dropped without
// a word, and the client would take the answer for what it asked for (response_format,
// max_tokens, stop, n, guided_json, logit_bias, ...). Each one present with a value that
// changes something is refused by name: kUnimplemented ("FIELD is not read on ROUTE: send
// INSTEAD" where `renames` names the route's own field, else "FIELD is a /v1/chat/completions
// field, not read on ROUTE"). Neutral values pass: null, false, an empty string, array or
// object, n or best_of 1, and true for the fields whose default it is (add_generation_prompt,
// skip_special_tokens, spaces_between_special_tokens, speculative), and -1 for the reasoning
// budgets (llama-server's "unlimited"). `reasoning_format` is left to the route (decision 0034:
// those routes keep their own reasoning blocks), and the tags and hints that change nothing
// (tag_fields.h: service_tier, prompt_cache_key, safety_identifier, store, verbosity) pass.
Status check_unread_chat_fields(const nlohmann::json& body, std::string_view route,
                                std::span<const std::string_view> read_here, std::span<const FieldRename> renames);

// The four routes that take a generation request.
enum class ApiRoute { kChat, kCompletions, kMessages, kResponses };

// The converse of check_unread_chat_fields, for every route: a field that another route of
// this server reads and `route` does not (/v1/messages' system, stop_sequences, thinking,
// output_config and output_format;
// /v1/responses' input, instructions, max_output_tokens, text, reasoning and
// previous_response_id; /v1/completions' prompt and suffix on the chat route; the chat route's
// messages, tools, tool_choice, functions, function_call, reasoning_effort,
// chat_template_kwargs and reasoning budgets on /v1/completions) was dropped without a word.
// Each is refused with a value that changes something: kUnimplemented, "FIELD is a OWNER
// field, not read on ROUTE" and ": send INSTEAD" where the route has its own field for it.
// Neutral values pass as in check_unread_chat_fields (null, false, "", [], {}; tool_choice
// and function_call "none" or "auto"). `shown_route`, where not empty, is the route the
// message names (llama-server's /completion reads /v1/completions' fields).
Status check_other_routes_fields(const nlohmann::json& body, ApiRoute route, std::string_view shown_route = {});

// Every field check_other_routes_fields names (roots of an error's param).
std::span<const std::string_view> other_route_field_names();

}  // namespace gs::server
