// Anthropic's output options on POST /v1/messages and /v1/messages/count_tokens: structured
// output (`output_config.format`, and the beta's `output_format` before it moved there) and
// `output_config.effort`.
#pragma once

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "server/api_request.h"
#include "text/json_grammar_cache.h"

namespace gs::server {

// Reads `output_config` and `output_format` into *gen. A format {"type": "json_schema",
// "schema": {...}} is the chat route's JSON constraint (gen->json_grammar, the same schema
// compiler as response_format's json_schema: the text block is JSON that follows the
// schema). `output_config.effort` (low, medium, high, xhigh or max) is a hint of how many
// tokens to spend and changes nothing here. Null, absent or empty: nothing. Errors
// (kInvalidArgument) name the field: a value of the wrong type, a format type other than
// json_schema, a missing schema, a schema the compiler refuses ("output_config.format.schema
// ..."), and both output_format and output_config.format at once. `cache` (null: none): the
// server's compiled grammars, through which the schema compiles (server/output_schema.h).
Status read_anthropic_output(const nlohmann::json& body, text::JsonGrammarCache* cache, GenerationOptions* gen);

}  // namespace gs::server
