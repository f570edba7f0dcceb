// The grammar of a JSON Schema for a whole output (decision 0072): every route's spelling of
// one (response_format json_schema and json_object with a schema, llama-server's json_schema,
// vLLM's guided_json and structured_outputs.json, the Messages route's output_config.format and
// output_format, the Responses route's text.format through response_format) compiles here, from
// the server's cache of compiled grammars when it has one.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "core/status.h"
#include "text/json_grammar.h"
#include "text/json_grammar_cache.h"

namespace gs::server {

// Exactly text::JsonGrammar::from_schema(schema, path) (the JSON syntax, a pattern budget of
// the schema's own): the same grammar, or the same error (kInvalidArgument beginning with
// `path`, the request field the schema came from: "response_format.json_schema.schema",
// "guided_json", "output_config.format.schema", ...). `cache` (null: none): compiles of
// earlier requests, keyed by the schema, `path` and the syntax, which give what this compile
// would (text::JsonGrammarCache); a hit is the kept grammar object, shared.
Result<std::shared_ptr<const text::JsonGrammar>> compile_output_schema(const nlohmann::json& schema,
                                                                       const std::string& path,
                                                                       text::JsonGrammarCache* cache);

}  // namespace gs::server
