// A tool call's grammar that waits for the call (tool_choice auto without structured output;
// decision 0065): the model's text is its own, unmasked, until it emits the call opener
// (<|tool_call>); from that token on the answer is handed to a forced call's constraint
// (engine/forced_calls_constraint.h), so the call spells a declared function ("call:NAME{"),
// its arguments follow that function's schema, and only an end of generation (or, where
// parallel calls are permitted, another such call) follows its closer. Before, a call the
// model made on its own was free after the opener: an undeclared name or arguments outside the
// schema came back as content or as a malformed call. The opener triggers wherever it comes,
// inside an unclosed thought too: the output parser reads it there as the thought's end and a
// call (OutputParser.ToolCallInsideUnclosedThought), so the call's text is held to the same
// rules. Text that spells the opener in ordinary tokens does not trigger (left to the parser).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/forced_calls_constraint.h"
#include "engine/output_constraint.h"

namespace gs {

class LazyCallsConstraint final : public OutputConstraint {
 public:
  // `call_open`: the opener's token id (>= 0). `first_call`: builds the constraint of the
  // call's text after the opener (null, or a builder that returns null: free up to the
  // closer). `calls`: what may follow a call's closer (non-null).
  LazyCallsConstraint(int32_t call_open, std::function<std::unique_ptr<OutputConstraint>()> first_call,
                      std::shared_ptr<const ForcedCallsOptions> calls);

  // Active for the whole answer: before the opener it waits for it, after it the calls hold.
  bool active() const override { return true; }
  // False before the opener (no mask: the step samples and drafts as without a constraint).
  bool constrains_next() const override { return calls_ != nullptr && calls_->constrains_next(); }
  // True before the opener; after it, as the calls' constraint.
  bool drafts_allowed() const override { return calls_ == nullptr || calls_->drafts_allowed(); }
  // Null where the calls' constraint cannot be copied (a call's name being spelled).
  std::unique_ptr<OutputConstraint> clone() const override;
  // Before the opener: the opener, at which the runner ends a round (the drafts before it are
  // verified unmasked, as without a constraint; the next round gets the call's masks).
  std::vector<int32_t> wake_tokens() const override;
  // Before the opener: empty (nothing to mask). After: the calls' mask, ascending.
  void allowed(std::vector<int32_t>* out) const override;
  void advance(int32_t token) override;
  std::string describe() const override;

 private:
  int32_t call_open_ = -1;
  std::function<std::unique_ptr<OutputConstraint>()> first_call_;
  std::shared_ptr<const ForcedCallsOptions> options_;
  std::unique_ptr<OutputConstraint> calls_;  // null until the opener is out
};

}  // namespace gs
