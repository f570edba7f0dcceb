// Anthropic's output_config / output_format, read into the chat request's JSON constraint.
#include "server/anthropic_output.h"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

#include "server/json_input.h"
#include "server/output_schema.h"
#include "server/tag_fields.h"
#include "text/json_grammar.h"

namespace gs::server {

namespace {

using nlohmann::json;

Status invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

// The format object at `where` ({"type": "json_schema", "schema": {...}}); a null format is none.
Status read_format(const json& format, const std::string& where, text::JsonGrammarCache* cache,
                   GenerationOptions* gen) {
  if (format.is_null()) return {};
  if (!format.is_object()) return invalid(fmt::format("{} must be an object, got {}", where, json_type_name(format)));
  std::optional<std::string> type;
  GS_RETURN_IF_ERROR(read_string(format, where, "type", &type));
  if (type != "json_schema") {
    return invalid(fmt::format("{}.type must be 'json_schema' (a JSON Schema in {}.schema), got {}", where, where,
                               type ? "'" + *type + "'" : std::string("none")));
  }
  const auto schema = format.find("schema");
  if (schema == format.end() || schema->is_null()) return invalid(fmt::format("{}.schema is required", where));
  if (!schema->is_object()) {
    return invalid(fmt::format("{}.schema must be an object (a JSON Schema), got {}", where, json_type_name(*schema)));
  }
  GS_ASSIGN_OR_RETURN(gen->json_grammar, compile_output_schema(*schema, where + ".schema", cache));
  return {};
}

}  // namespace

Status read_anthropic_output(const json& body, text::JsonGrammarCache* cache, GenerationOptions* gen) {
  const auto beta = body.find("output_format");
  const bool has_beta = beta != body.end() && !beta->is_null();
  if (has_beta) GS_RETURN_IF_ERROR(read_format(*beta, "output_format", cache, gen));
  const auto config = body.find("output_config");
  if (config == body.end() || config->is_null()) return {};
  if (!config->is_object()) {
    return invalid(fmt::format("output_config must be an object, got {}", json_type_name(*config)));
  }
  constexpr std::string_view kEfforts[] = {"low", "medium", "high", "xhigh", "max"};
  GS_RETURN_IF_ERROR(read_choice(*config, "output_config", "effort", kEfforts));
  const auto format = config->find("format");
  if (format == config->end() || format->is_null()) return {};
  if (has_beta) {
    return invalid("output_format and output_config.format both set the output's format (output_format is the "
                   "beta's name of output_config.format): send one");
  }
  return read_format(*format, "output_config.format", cache, gen);
}

}  // namespace gs::server
