#include "server/tool_grammars.h"

#include <nlohmann/json.hpp>

#include "text/chat_values.h"

namespace gs::server {

Status check_forced_tool_schema(const nlohmann::json& parameters, const std::string& path) {
  GS_RETURN_IF_ERROR(text::check_schema_refs(parameters, path));
  // Integers beyond 64 bits are read as the grammar reads them (grammar() below).
  return text::check_schema_values(text::chat::plain_json(parameters), path, text::JsonSyntax::kGemmaCall);
}

ToolGrammars::ToolGrammars(std::span<const text::ChatTool> tools, text::RegexBudget budget,
                           text::JsonGrammarCache* cache)
    : tools_(tools), entries_(tools.size()), budget_(budget), cache_(cache) {}

std::shared_ptr<const text::JsonGrammar> ToolGrammars::grammar(size_t index, std::string* why_not) {
  Entry& e = entries_.at(index);
  if (!e.compiled) {
    e.compiled = true;
    // A function without `parameters` takes none (OpenAI: "omitting parameters defines a
    // function with an empty parameter list"; the template declares it without any): its
    // arguments are `{}`. They were left free, and a forced call wrote invented keys.
    static const nlohmann::json kNoParameters = {
        {"type", "object"}, {"properties", nlohmann::json::object()}, {"additionalProperties", false}};
    const text::ChatTool& tool = tools_[index];
    const nlohmann::json& schema = tool.parameters.is_null() ? kNoParameters : tool.parameters;
    if (schema.is_object() && !schema.empty()) {
      // Integers beyond 64 bits kept as written for the declaration (keep_exact_tool_integers)
      // are the doubles the grammar reads.
      const nlohmann::json plain = text::chat::plain_json(schema);
      auto g = text::compile_schema(cache_, plain, "parameters", text::JsonSyntax::kGemmaCall, &budget_);
      if (!g.ok()) {
        e.why_not = g.status().message();
      } else if (((*g)->node(0).kinds & text::JsonGrammar::kObject) == 0) {
        e.why_not = "parameters does not describe an object";
      } else {
        e.grammar = *g;
      }
    }
  }
  *why_not = e.why_not;
  return e.grammar;
}

}  // namespace gs::server
