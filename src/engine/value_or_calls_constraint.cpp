// Token masks for structured output beside tools: the value, or calls only.
#include "engine/value_or_calls_constraint.h"

#include <utility>

namespace gs {

ValueOrCallsConstraint::ValueOrCallsConstraint(std::unique_ptr<OutputConstraint> value, int32_t call_open,
                                               std::function<std::unique_ptr<OutputConstraint>()> first_call,
                                               std::shared_ptr<const ForcedCallsOptions> calls)
    : value_(std::move(value)), call_open_(call_open), first_call_(std::move(first_call)), options_(std::move(calls)) {}

bool ValueOrCallsConstraint::constrains_next() const {
  if (calls_) return calls_->constrains_next();
  return value_ && value_->constrains_next();
}

bool ValueOrCallsConstraint::drafts_allowed() const {
  if (calls_) return calls_->drafts_allowed();
  return value_ && value_->drafts_allowed();
}

std::unique_ptr<OutputConstraint> ValueOrCallsConstraint::clone() const {
  std::unique_ptr<OutputConstraint> part = calls_ ? calls_->clone() : (value_ ? value_->clone() : nullptr);
  if (!part) return nullptr;
  auto out = std::make_unique<ValueOrCallsConstraint>(nullptr, call_open_, first_call_, options_);
  (calls_ ? out->calls_ : out->value_) = std::move(part);
  return out;
}

void ValueOrCallsConstraint::allowed(std::vector<int32_t>* out) const {
  out->clear();
  if (calls_) {
    calls_->allowed(out);
  } else if (value_) {
    value_->allowed(out);
  }
}

void ValueOrCallsConstraint::advance(int32_t token) {
  if (calls_) {
    calls_->advance(token);
    return;
  }
  if (!value_) return;
  value_->advance(token);
  // The value's constraint allows the opener only as the answer's first token (after a
  // thought), where it ends that constraint: the answer is a call from here on.
  if (token == call_open_ && !value_->active()) {
    value_.reset();
    calls_ = std::make_unique<ForcedCallsConstraint>(first_call_ ? first_call_() : nullptr, options_);
  }
}

std::string ValueOrCallsConstraint::describe() const {
  if (calls_) return "calls instead of the value: " + calls_->describe();
  return value_ ? value_->describe() : std::string("over");
}

}  // namespace gs
