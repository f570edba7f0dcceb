// The answer to a forced tool call (tool_choice "required" or a named function) is calls and
// nothing else, as OpenAI's: this constraint wraps the first call's own constraint (its name,
// its arguments' grammar, or nothing where only the call's form is forced) and, once the
// call's closer is emitted, allows only an end of generation or, where the request permits
// parallel calls, the opener of another call, whose text must then be another call of the kind
// allowed (the next-call constraint). Before, the model's text after the closer was free, and
// at high temperature prose followed the call (decision 0016, "After the forced call").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/output_constraint.h"

namespace gs {

struct ForcedCallsOptions {
  int32_t call_open = -1;           // the call opener token (<|tool_call>)
  int32_t call_close = -1;          // the call closer token (<tool_call|>)
  std::vector<int32_t> end_tokens;  // the model's ends of generation
  // Builds the constraint of a later call's text after its opener; null: no later call (only
  // an end may follow the first call).
  std::function<std::unique_ptr<OutputConstraint>()> next_call;
};

class ForcedCallsConstraint final : public OutputConstraint {
 public:
  // `first`: the constraint of the first call's text (null or inactive: free until the closer).
  ForcedCallsConstraint(std::unique_ptr<OutputConstraint> first, std::shared_ptr<const ForcedCallsOptions> options);
  ForcedCallsConstraint(const ForcedCallsConstraint& other);

  // Active for the whole answer: the sequence ends at an end of generation.
  bool active() const override { return true; }
  // Inside a call: as its constraint (free where it has none). Between calls: always.
  bool constrains_next() const override;
  bool drafts_allowed() const override;
  // Null where the call's constraint cannot be copied.
  std::unique_ptr<OutputConstraint> clone() const override;
  // Between calls: the end tokens, and the opener where a later call may come; ascending.
  void allowed(std::vector<int32_t>* out) const override;
  void advance(int32_t token) override;
  std::string describe() const override;

 private:
  std::shared_ptr<const ForcedCallsOptions> options_;
  std::unique_ptr<OutputConstraint> call_;  // the current call's constraint while it holds
  bool between_ = false;                    // a call was closed; the next one has not begun
  int n_calls_ = 1;                         // calls begun (for logs)
};

}  // namespace gs
