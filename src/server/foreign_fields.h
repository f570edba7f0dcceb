// Other servers' request fields (vLLM's, llama-server's) that change what a client gets back
// and that this server does not implement: accepted at the value that changes nothing,
// refused by name otherwise, never silently ignored (decision 0010, "Other servers' fields").
#pragma once

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace gs::server {

// Checks `body` (a chat completion body when `chat`, else a text completion body). Absent
// or null fields pass. Accepted values: include_stop_str_in_output false,
// use_beam_search false, skip_special_tokens true, spaces_between_special_tokens a boolean,
// return_tokens_as_token_ids false, n_probs 0, chat_template "" (chat), echo false (chat:
// vLLM's echo of the last message; /v1/completions reads its own echo). Refused, whatever
// their value: prompt_logprobs, truncate_prompt_tokens. Errors: kInvalidArgument for a value
// of the wrong type, kUnimplemented ("... is not supported by this server") for a value
// that would change the answer; both name the field first.
Status check_foreign_fields(const nlohmann::json& body, bool chat);

}  // namespace gs::server
