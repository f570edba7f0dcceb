// The interface of a token-level output constraint: which tokens a sequence may sample
// next. Two kinds: a few allowed completions (a forced tool call's name and first key,
// engine/completion_constraint.h) and a JSON grammar (structured output,
// engine/json_constraint.h). The slot runner asks before each sample and reports every
// token the sequence emits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gs {

class OutputConstraint {
 public:
  virtual ~OutputConstraint() = default;
  // False once the constraint is over (met, or left for good): the runner drops it.
  virtual bool active() const = 0;
  // False while the constraint lets the next token be anything (and drafting run) but is
  // not over, e.g. inside a thought span before a JSON answer.
  virtual bool constrains_next() const { return active(); }
  // Whether the sequence may draft while constrained; then clone() gives a copy that the
  // runner advances through a round's drafts to give each verify position its mask.
  // Otherwise it drafts nothing while constrained.
  virtual bool drafts_allowed() const { return false; }
  virtual std::unique_ptr<OutputConstraint> clone() const { return nullptr; }
  // While constrains_next() is false: the tokens after which it may constrain again, when it
  // knows them (empty: it does not). Then the runner decodes as without a constraint (drafts
  // picked as usual, no masks at the verify positions) and ends a round at any of these
  // tokens, so no token after one is emitted unmasked (engine/lazy_calls_constraint.h).
  virtual std::vector<int32_t> wake_tokens() const { return {}; }
  // The allowed token ids, ascending, into `out` (cleared first). Empty when the
  // vocabulary cannot continue (the caller then samples unconstrained and drops it).
  virtual void allowed(std::vector<int32_t>* out) const = 0;
  // Records an emitted token.
  virtual void advance(int32_t token) = 0;
  // What has been generated under the constraint, for logs.
  virtual std::string describe() const = 0;
};

}  // namespace gs
