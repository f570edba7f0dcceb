// Token masks for tool_choice auto: free text, then, from the call opener on, calls only.
#include "engine/lazy_calls_constraint.h"

#include <utility>

namespace gs {

LazyCallsConstraint::LazyCallsConstraint(int32_t call_open,
                                         std::function<std::unique_ptr<OutputConstraint>()> first_call,
                                         std::shared_ptr<const ForcedCallsOptions> calls)
    : call_open_(call_open), first_call_(std::move(first_call)), options_(std::move(calls)) {}

std::unique_ptr<OutputConstraint> LazyCallsConstraint::clone() const {
  auto out = std::make_unique<LazyCallsConstraint>(call_open_, first_call_, options_);
  if (calls_) {
    out->calls_ = calls_->clone();
    if (!out->calls_) return nullptr;
  }
  return out;
}

std::vector<int32_t> LazyCallsConstraint::wake_tokens() const {
  if (calls_) return {};
  return {call_open_};
}

void LazyCallsConstraint::allowed(std::vector<int32_t>* out) const {
  out->clear();
  if (calls_) calls_->allowed(out);
}

void LazyCallsConstraint::advance(int32_t token) {
  if (calls_) {
    calls_->advance(token);
    return;
  }
  if (token == call_open_) {
    calls_ = std::make_unique<ForcedCallsConstraint>(first_call_ ? first_call_() : nullptr, options_);
  }
}

std::string LazyCallsConstraint::describe() const {
  return calls_ ? "calls after free text: " + calls_->describe() : std::string("free text before a call");
}

}  // namespace gs
