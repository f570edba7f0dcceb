// Token masks for a call forced among several functions: the name, then the chosen
// function's arguments.
#include "engine/call_choice_constraint.h"

#include <algorithm>
#include <utility>

#include "engine/json_constraint.h"
#include "text/json_grammar.h"

namespace gs {

CallChoiceConstraint::CallChoiceConstraint(std::shared_ptr<const TokenPieces> pieces,
                                           std::vector<std::string> completions, std::vector<CallArguments> arguments,
                                           std::vector<int32_t> end_tokens)
    : pieces_(pieces), names_(std::move(pieces), std::move(completions)), end_tokens_(std::move(end_tokens)) {
  for (CallArguments& a : arguments) {
    if (a.grammar != nullptr && !a.opener.empty() && a.opener.back() == '{') arguments_.push_back(std::move(a));
  }
}

CallChoiceConstraint::CallChoiceConstraint(const CallChoiceConstraint& other)
    : pieces_(other.pieces_),
      names_(other.names_),
      arguments_(other.arguments_),
      end_tokens_(other.end_tokens_),
      value_(other.value_ ? other.value_->clone() : nullptr) {}

bool CallChoiceConstraint::active() const { return value_ ? value_->active() : names_.active(); }

bool CallChoiceConstraint::constrains_next() const { return value_ ? value_->constrains_next() : names_.active(); }

bool CallChoiceConstraint::drafts_allowed() const { return value_ != nullptr && value_->drafts_allowed(); }

std::unique_ptr<OutputConstraint> CallChoiceConstraint::clone() const {
  return std::make_unique<CallChoiceConstraint>(*this);
}

const CallArguments* CallChoiceConstraint::arguments_for(const std::string& text) const {
  for (const CallArguments& a : arguments_) {
    if (text.size() >= a.opener.size() && text.compare(0, a.opener.size(), a.opener) == 0) return &a;
  }
  return nullptr;
}

bool CallChoiceConstraint::begins_arguments(const CallArguments& a, const std::string& rest) {
  text::JsonMatcher m(a.grammar);
  return m.feed(std::string_view("{")) && (rest.empty() || m.feed(std::string_view(rest)));
}

void CallChoiceConstraint::allowed(std::vector<int32_t>* out) const {
  if (value_) {
    value_->allowed(out);
    return;
  }
  names_.allowed(out);
  // A token that finishes an opener and goes on writes the start of the arguments too.
  std::erase_if(*out, [this](int32_t id) {
    const std::string text = names_.text() + pieces_->piece(id);
    const CallArguments* a = arguments_for(text);
    return a != nullptr && text.size() > a->opener.size() && !begins_arguments(*a, text.substr(a->opener.size()));
  });
}

void CallChoiceConstraint::advance(int32_t token) {
  if (value_) {
    value_->advance(token);
    return;
  }
  if (!names_.active()) return;
  names_.advance(token);
  if (names_.active()) return;
  const CallArguments* a = arguments_for(names_.text());
  if (a == nullptr) return;  // an opener without arguments (or off every opener): over
  JsonConstraintOptions options;
  options.end_tokens = end_tokens_;
  options.prefix = names_.text().substr(a->opener.size() - 1);  // from the arguments' '{'
  value_ = std::make_unique<JsonConstraint>(pieces_, a->grammar, std::move(options));
}

std::string CallChoiceConstraint::describe() const { return names_.text() + (value_ ? " ... " + value_->describe() : ""); }

}  // namespace gs
