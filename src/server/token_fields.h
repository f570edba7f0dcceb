// vLLM's token-level request fields, shared by the chat and text completion routes.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace gs::server {

// stop_token_ids: an array of token ids in [0, n_vocab) (n_vocab 0: unchecked), at most
// kMaxStopTokenIds distinct ones, into *out (sorted, repeats dropped); generation ends at one
// of them and its text is not part of the answer, as vLLM. Errors (kInvalidArgument) name
// the field ("stop_token_ids[2]: ...").
// bad_words and allowed_token_ids constrain which tokens may be sampled, which this server
// does not do: refused by name (kUnimplemented) rather than ignored, since the client would
// take free text for constrained output. An empty array or null asks for nothing.
Status read_token_fields(const nlohmann::json& body, int32_t n_vocab, std::vector<int32_t>* out);

}  // namespace gs::server
