// The fields that tag a request for the client's own records: OpenAI's `user` and `metadata`
// and Anthropic's `metadata`. Nothing is kept and the answer does not depend on them, but a
// value of the wrong type is refused as the APIs refuse it, naming the field.
#pragma once

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace gs::server {

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

}  // namespace gs::server
