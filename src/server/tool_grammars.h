// The argument grammars of a request's tools (decision 0027 point 7): each tool's compiled at
// most once, and all their patterns from one budget, so that neither the number of tools nor
// the places a plan needs a tool's grammar multiply what one request may cost (decision 0051).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "text/chat_format.h"
#include "text/json_grammar.h"
#include "text/json_grammar_cache.h"
#include "text/regex_dfa.h"

namespace gs::server {

// The checks a forced call's schema (the `parameters` of the one tool a request forces, at
// `path`, "tools[0].function.parameters") passes before a plan compiles it: a schema that is
// broken is a 400, where one the grammar merely cannot hold keeps the forced-call fallback
// (decision 0027 point 7). Errors (kInvalidArgument beginning with the keyword's path): a
// "$ref" that names nothing (text::check_schema_refs); a keyword that leaves its schema no value
// (text::check_schema_values in the call form: an empty enum, bounds or lengths nothing meets).
Status check_forced_tool_schema(const nlohmann::json& parameters, const std::string& path);

class ToolGrammars {
 public:
  // `tools` must outlive this. `budget`: what the patterns of all their schemas may spend
  // together (one schema's budget by default). `cache` (null: none; else it must outlive
  // this): grammars compiled for earlier requests (decision 0066), which give what a compile
  // here would, charged to `budget` as that compile would spend it.
  explicit ToolGrammars(std::span<const text::ChatTool> tools, text::RegexBudget budget = {},
                        text::JsonGrammarCache* cache = nullptr);

  // Tool `index`'s arguments as a grammar in the call form (text::JsonSyntax::kGemmaCall):
  // its schema, when the compiler holds it and it describes an object (a function without
  // `parameters` takes none: `{}`); null otherwise, with why in *why_not when there was a
  // schema to follow (empty for an empty schema: nothing is lost). A pattern the shared
  // budget no longer covers is ignored, as any pattern the call form cannot hold (one that
  // allOf or anyOf merges with another past it leaves the tool without a grammar).
  std::shared_ptr<const text::JsonGrammar> grammar(size_t index, std::string* why_not);

  // What the patterns may still spend.
  const text::RegexBudget& budget_left() const { return budget_; }

 private:
  struct Entry {
    bool compiled = false;
    std::shared_ptr<const text::JsonGrammar> grammar;
    std::string why_not;
  };
  std::span<const text::ChatTool> tools_;
  std::vector<Entry> entries_;
  text::RegexBudget budget_;
  text::JsonGrammarCache* cache_;
};

}  // namespace gs::server
