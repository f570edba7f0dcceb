// The fields that tag a request for the client's own records or the provider's routing, and
// hints this server takes without acting on them: OpenAI's `user`, `metadata`,
// `service_tier`, `prompt_cache_key`, `safety_identifier`, `store`, `verbosity` and
// /v1/responses' `reasoning.summary`, and Anthropic's `metadata` and `service_tier`. Nothing
// is kept and the answer does not depend on them, but a value of the wrong type is refused as
// the APIs refuse it, naming the field.
#pragma once

#include <nlohmann/json.hpp>

#include <span>
#include <string_view>

#include "core/status.h"

namespace gs::server {

// A string field of `obj` (at `path`, "" for the body) that is absent, null or one of
// `allowed`; else a 400 naming the field and the allowed values.
Status read_choice(const nlohmann::json& obj, std::string_view path, const char* key,
                   std::span<const std::string_view> allowed);

// OpenAI's `user` (chat completions, completions, responses): a string. Absent or null passes.
// Error (kInvalidArgument): "user must be a string, got number".
Status check_openai_user(const nlohmann::json& body);

// OpenAI's `metadata` (chat completions, responses): an object of at most 16 pairs whose keys
// hold at most 64 characters and whose values are strings of at most 512 characters (code
// points). Absent or null passes. Errors (kInvalidArgument) name the field or the key
// ("metadata.tier must be a string, got number").
Status check_openai_metadata(const nlohmann::json& body);

// Anthropic's `metadata` (/v1/messages): an object whose `user_id`, when present and not null,
// is a string. Other keys pass unread, as vLLM's Messages route takes them. Absent or null
// passes. Errors (kInvalidArgument): "metadata.user_id must be a string or null, got number".
Status check_anthropic_metadata(const nlohmann::json& body);

// OpenAI's request tags (chat completions, responses): `service_tier` a string ("auto",
// "default", "flex", "priority", ...; no tier is told apart here) or null, `prompt_cache_key`
// and `safety_identifier` strings, `prompt_cache_retention` "in_memory" (or its SDKs' older
// "in-memory") or "24h" (slots keep their prefixes as long as nothing else needs them, either
// way). Absent or null passes.
// Error (kInvalidArgument): "service_tier must be a string or null, got number".
Status check_openai_tags(const nlohmann::json& body);

// Chat completions' `store` (OpenAI's: keep the completion for distillation; nothing is kept
// here), `verbosity` (low, medium or high; a hint the model is not given) and `prediction`
// (Predicted Outputs, a latency hint: {"type": "content", "content": a string or an array of
// text parts}; nothing is drafted from it). Absent or null passes. Errors (kInvalidArgument):
// "store must be true or false, got string", "verbosity must be low, medium or high, got
// 'loud'", "prediction.content is required (a string or an array of text parts)".
Status check_chat_hints(const nlohmann::json& body);

// /v1/responses' `text.verbosity` (low, medium or high) and `reasoning.summary` (auto, concise
// or detailed: no summary is written here; the reasoning item carries the thought itself).
// Absent or null passes; `text` and `reasoning` themselves are checked by their readers (a
// value that is not an object passes here). Errors (kInvalidArgument) name the field.
Status check_responses_hints(const nlohmann::json& body);

// Anthropic's `service_tier` (/v1/messages): "auto" or "standard_only", or null.
// Errors (kInvalidArgument): "service_tier must be auto or standard_only, got 'fast'", and
// for another type "... (a string) or null, got number".
Status check_anthropic_service_tier(const nlohmann::json& body);

// The top-level chat completion fields checked here and otherwise not read (service_tier,
// prompt_cache_key, safety_identifier, store, verbosity, prediction): a route that translates into a chat
// request and does not read one of them does not refuse it (it changes nothing).
std::span<const std::string_view> chat_tag_field_names();

}  // namespace gs::server
