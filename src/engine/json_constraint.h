// Structured output on the token level (decision 0027): the sequence's content must be one
// JSON value its grammar accepts (text/json_grammar.h). Before the value, a thought span may
// run free, or a tool call's opener may end the constraint; after it, only an
// end-of-generation token may come.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/completion_constraint.h"
#include "engine/output_constraint.h"
#include "text/json_grammar.h"

namespace gs {

struct JsonConstraintOptions {
  int32_t think_open = -1;              // a first token that opens a free thought span (-1: none)
  int32_t think_close = -1;             // the token that closes it
  bool starts_in_thought = false;       // the output begins inside that span (the prompt opened it)
  std::vector<int32_t> escape_tokens;   // a first token that ends the constraint (a tool call's opener)
  std::vector<int32_t> end_tokens;      // end of generation: allowed once the value is whole
  std::string prefix;                   // text of the value already written (in the prompt)
};

class JsonConstraint final : public OutputConstraint {
 public:
  JsonConstraint(std::shared_ptr<const TokenPieces> pieces, std::shared_ptr<const text::JsonGrammar> grammar,
                 JsonConstraintOptions options);

  bool active() const override { return phase_ != Phase::kOver; }
  bool constrains_next() const override { return phase_ == Phase::kStart || phase_ == Phase::kValue; }
  bool drafts_allowed() const override { return true; }
  std::unique_ptr<OutputConstraint> clone() const override { return std::make_unique<JsonConstraint>(*this); }
  // Cost per step: one pass over the tokens whose first byte can come next; inside a free
  // string, a merge of the precomputed string-safe ids with the few other ids that fit.
  void allowed(std::vector<int32_t>* out) const override;
  // A token that does not fit (only an unmasked step can give one) ends the constraint.
  void advance(int32_t token) override;
  std::string describe() const override { return text_; }

 private:
  enum class Phase { kStart, kThought, kValue, kOver };
  bool fits(int32_t id) const;

  std::shared_ptr<const TokenPieces> pieces_;
  JsonConstraintOptions options_;
  text::JsonMatcher matcher_;
  mutable text::JsonMatcher scratch_;
  Phase phase_ = Phase::kStart;
  bool thought_done_ = false;
  bool gemma_ = false;             // the grammar writes a Gemma 4 tool call's arguments
  std::vector<int32_t> reserved_;  // the options' tokens, sorted: never part of the JSON text
  std::string text_;               // the end of the JSON text so far (for logs)
};

}  // namespace gs
