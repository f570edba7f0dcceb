// llama-server's sampler fields, shared by the chat and text completion routes.
#pragma once

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "engine/engine.h"

namespace gs::server {

// llama-server's sampler fields, read after the OpenAI ones into *sampling (which holds the
// request's temperature, top_k, top_p, min_p and penalties by then). One policy for all of
// them, as for `grammar` (decision 0010, "Other servers' fields"): a field's type and range
// are checked always (kInvalidArgument naming it); a value that changes nothing in this
// server's sampler chain is accepted; `repeat_penalty` is `repetition_penalty` by
// llama.cpp's name (the same sampler: a logit above 0 divided by it, else multiplied, over
// the last 64 tokens, the prompt's included), and must agree with it when both are sent;
// any other value that would change sampling is refused by name (kUnimplemented), since
// the client would take the plain chain's output for the one it asked for.
//   - neutral values: typical_p >= 1, mirostat 0, xtc_probability 0 (or xtc_threshold
//     above 0.5, which llama.cpp reads as off), dry_multiplier 0 (or dry_base below 1, or
//     dry_penalty_last_n 0), dynatemp_range 0, top_n_sigma <= 0, min_keep 0 or 1 (or no
//     truncation sampler on), repeat_last_n / penalty_last_n 64 (or no penalty on);
//   - mirostat_tau / mirostat_eta, xtc_threshold, dry_base / dry_allowed_length /
//     dry_penalty_last_n / dry_sequence_breakers and dynatemp_exponent are only checked
//     (they matter only with their sampler on);
//   - samplers (an array of names or llama.cpp's string of letters): the samplers this
//     server runs that are on (penalties, top_k, top_p, min_p, temperature) must all be
//     named, in the chain's order; others (dry, typ_p, xtc, top_n_sigma) may be named, as
//     they are off; an unknown name, "infill", or a name given twice is refused.
Status read_llama_sampler_fields(const nlohmann::json& body, SamplingParams* sampling);

}  // namespace gs::server
