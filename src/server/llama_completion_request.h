// llama-server's native POST /completion body, read into the typed request that
// /v1/completions runs (decision 0061): its prompt forms, n_probs, return_tokens, id_slot and
// its other native fields; the sampler, stop, limit and schema fields go through the same
// readers as on /v1/completions.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "server/api_request.h"
#include "text/json_grammar_cache.h"
#include "text/tokenizer.h"

namespace gs::server {

// The most alternatives n_probs may ask for (the engine's top-logprob limit).
inline constexpr int32_t kMaxNProbs = 20;

struct LlamaCompletionRequest {
  // What /v1/completions' path runs: one choice, no echo; gen.n_logprobs is n_probs (-1 for 0).
  CompletionRequest completion;
  int32_t n_probs = 0;         // alternatives per completion_probabilities entry; 0: no entries
  bool return_tokens = false;  // the whole answer's `tokens` holds the generated ids
  // The answer carries token ids (a stream's chunks always do, the whole answer with
  // return_tokens): the plan's release_tokens, so that each id comes with the text it spells.
  bool wants_tokens = false;
  int32_t id_slot = -1;        // accepted: the server picks the slot itself (-1 is "any")
};

// Reads a /completion body (an object). `prompt` is a string (BOS added, control-token text
// parsed, as /v1/completions), an array of token ids (as given), an array mixing token ids and
// strings (each string tokenized with control-token text parsed, BOS before a first string
// only; `tok` tokenizes), {"prompt_string": ...} without multimodal_data, or any of these as
// the only element of an array. n_predict absent or -1 is the server's limit
// (--default-max-tokens), as on the other routes. Errors name the field first:
// kInvalidArgument for a value of the wrong type or range, kUnimplemented ("... is not
// supported on /completion") for what this server cannot honour: several prompts, multimodal
// data, n_probs above kMaxNProbs, post_sampling_probs, timings_per_token, return_progress,
// response_fields, a GBNF grammar and the grammar fields with it, /v1/completions' echo,
// logprobs, suffix, n and best_of above 1 and stream_options (the native shapes have no place
// for them), and every field /v1/completions refuses.
Result<LlamaCompletionRequest> parse_llama_completion_request(const nlohmann::json& body,
                                                              const RequestDefaults& defaults,
                                                              const text::Tokenizer& tok,
                                                              text::JsonGrammarCache* grammar_cache = nullptr);

// error.param for an error of the reader above: error_param's, or a native field of
// /completion that it does not know ("id_slot", "return_tokens", ...); "" when none.
std::string llama_completion_error_param(std::string_view message);

}  // namespace gs::server
