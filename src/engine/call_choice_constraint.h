// A forced tool call among several functions (tool_choice "required" with more than one
// tool): the output must first spell one of a few openers ("NAME{", or "NAME{key:" for a
// function whose schema the grammar cannot hold), and once it spells an opener that has
// arguments (a grammar), the call's arguments must be that grammar's value, up to one of the
// end tokens (the call's closer). Before, only the name and the first key were constrained,
// and the arguments of the chosen function were the model's ({"a":"text"} for an integer a).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/completion_constraint.h"
#include "engine/engine.h"
#include "engine/output_constraint.h"

namespace gs {

class CallChoiceConstraint final : public OutputConstraint {
 public:
  // `completions`: the allowed openers (non-empty strings). `arguments`: the openers that
  // continue as a JSON value (each opener must end with the arguments' '{' and be one of
  // `completions`); `end_tokens`: the tokens that may end those arguments once they are a
  // whole value (the model's end of generation and the call's closer). An opener met without
  // arguments ends the constraint, as CompletionConstraint does.
  CallChoiceConstraint(std::shared_ptr<const TokenPieces> pieces, std::vector<std::string> completions,
                       std::vector<CallArguments> arguments, std::vector<int32_t> end_tokens);
  CallChoiceConstraint(const CallChoiceConstraint& other);

  bool active() const override;
  bool constrains_next() const override;
  // Drafts run while the arguments are being written (the JSON constraint's masks), not
  // while the name is.
  bool drafts_allowed() const override;
  std::unique_ptr<OutputConstraint> clone() const override;
  // While the name is written: the tokens that keep it on an opener; a token that completes
  // an opener with arguments and goes on is allowed only if what it adds begins that value.
  // Then: the arguments' JSON mask. Ascending ids, cleared first.
  void allowed(std::vector<int32_t>* out) const override;
  void advance(int32_t token) override;
  std::string describe() const override;

 private:
  // The arguments whose opener `text` starts with, or nullptr.
  const CallArguments* arguments_for(const std::string& text) const;
  // Whether `rest` (the bytes after the opener's '{') can begin the opener's arguments.
  static bool begins_arguments(const CallArguments& a, const std::string& rest);

  std::shared_ptr<const TokenPieces> pieces_;
  CompletionConstraint names_;
  std::vector<CallArguments> arguments_;
  std::vector<int32_t> end_tokens_;
  std::unique_ptr<OutputConstraint> value_;  // set once an opener with arguments is spelled
};

}  // namespace gs
