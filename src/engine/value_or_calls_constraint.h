// Structured output with tools offered (tool_choice auto; decision 0027 §4): the answer is the
// JSON value, or, when the model opens a tool call instead, calls and nothing else. This
// constraint holds the value's constraint until the model's first token; a call's opener there
// hands the answer over to a forced call's constraint (engine/forced_calls_constraint.h), so the
// call spells a declared function and follows its schema, and only an end of generation (or
// another call, where parallel calls are permitted) comes after its closer. Before, the opener
// ended every constraint: a call that did not parse came back as content that was neither a call
// nor the value the client's schema asked for.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/forced_calls_constraint.h"
#include "engine/output_constraint.h"

namespace gs {

class ValueOrCallsConstraint final : public OutputConstraint {
 public:
  // `value`: the JSON value's constraint, whose first token may be `call_open` (an escape
  // token). `first_call`: builds the constraint of the call's text after its opener.
  // `calls`: what may follow the call's closer.
  ValueOrCallsConstraint(std::unique_ptr<OutputConstraint> value, int32_t call_open,
                         std::function<std::unique_ptr<OutputConstraint>()> first_call,
                         std::shared_ptr<const ForcedCallsOptions> calls);

  bool active() const override { return calls_ ? calls_->active() : value_ && value_->active(); }
  bool constrains_next() const override;
  bool drafts_allowed() const override;
  std::unique_ptr<OutputConstraint> clone() const override;
  void allowed(std::vector<int32_t>* out) const override;
  void advance(int32_t token) override;
  std::string describe() const override;

 private:
  std::unique_ptr<OutputConstraint> value_;  // until a call's opener
  int32_t call_open_ = -1;
  std::function<std::unique_ptr<OutputConstraint>()> first_call_;
  std::shared_ptr<const ForcedCallsOptions> options_;
  std::unique_ptr<OutputConstraint> calls_;  // once the opener is out
};

}  // namespace gs
