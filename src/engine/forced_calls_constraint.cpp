// Token masks for the answer of a forced call: the calls, then an end.
#include "engine/forced_calls_constraint.h"

#include <algorithm>
#include <utility>

namespace gs {

ForcedCallsConstraint::ForcedCallsConstraint(std::unique_ptr<OutputConstraint> first,
                                             std::shared_ptr<const ForcedCallsOptions> options)
    : options_(std::move(options)), call_(std::move(first)) {
  if (call_ && !call_->active()) call_.reset();
}

ForcedCallsConstraint::ForcedCallsConstraint(const ForcedCallsConstraint& other)
    : options_(other.options_),
      call_(other.call_ ? other.call_->clone() : nullptr),
      between_(other.between_),
      n_calls_(other.n_calls_) {}

bool ForcedCallsConstraint::constrains_next() const {
  if (between_) return true;
  return call_ && call_->constrains_next();
}

bool ForcedCallsConstraint::drafts_allowed() const {
  if (between_ || !call_) return true;
  return call_->drafts_allowed();
}

std::unique_ptr<OutputConstraint> ForcedCallsConstraint::clone() const {
  if (call_) {
    std::unique_ptr<OutputConstraint> copy = call_->clone();
    if (!copy) return nullptr;
    auto out = std::make_unique<ForcedCallsConstraint>(nullptr, options_);
    out->call_ = std::move(copy);
    out->between_ = between_;
    out->n_calls_ = n_calls_;
    return out;
  }
  return std::make_unique<ForcedCallsConstraint>(*this);
}

void ForcedCallsConstraint::allowed(std::vector<int32_t>* out) const {
  out->clear();
  if (!between_) {
    if (call_ && call_->constrains_next()) call_->allowed(out);
    return;
  }
  *out = options_->end_tokens;
  if (options_->next_call && options_->call_open >= 0) out->push_back(options_->call_open);
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
}

void ForcedCallsConstraint::advance(int32_t token) {
  if (between_) {
    if (token == options_->call_open && options_->next_call) {
      between_ = false;
      ++n_calls_;
      call_ = options_->next_call();
      if (call_ && !call_->active()) call_.reset();
    }
    return;  // an end token: the sequence ends
  }
  if (call_) {
    call_->advance(token);
    if (!call_->active()) call_.reset();
  }
  if (token == options_->call_close) {
    call_.reset();
    between_ = true;
  }
}

std::string ForcedCallsConstraint::describe() const {
  std::string d = "call " + std::to_string(n_calls_);
  if (between_) return d + " closed";
  return call_ ? d + ": " + call_->describe() : d;
}

}  // namespace gs
