// A token-level output constraint: the generated text must spell one of a few given
// completions (a tool name and its '{' after a forced "call:"), token by token. Also the
// vocabulary's pieces (TokenPieces), shared with the JSON constraint.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/output_constraint.h"
#include "text/tokenizer.h"

namespace gs {

// The bytes each token adds to decoded text (Tokenizer::token_to_piece, specials not
// rendered), indexed by first byte. Built once per vocabulary and shared by every constraint.
class TokenPieces {
 public:
  explicit TokenPieces(const text::Tokenizer& tokenizer);
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  int32_t n_vocab() const { return static_cast<int32_t>(pieces_.size()); }
  // Ids whose piece starts with byte `b` (tokens with an empty piece are in no list).
  const std::vector<int32_t>& starting_with(unsigned char b) const { return by_first_byte_[b]; }
  // Ids, ascending, whose piece a free JSON string may take as it is (text::json_string_safe),
  // and the other ids with a non-empty piece.
  const std::vector<int32_t>& json_string_safe() const { return json_safe_; }
  const std::vector<int32_t>& json_string_unsafe() const { return json_unsafe_; }
  // The characters of each json_string_safe() piece, in the same order.
  const std::vector<uint16_t>& json_string_safe_chars() const { return json_safe_chars_; }
  // The same three lists for the string text of a Gemma 4 tool call (text::gemma_string_safe).
  const std::vector<int32_t>& gemma_string_safe() const { return gemma_safe_; }
  const std::vector<int32_t>& gemma_string_unsafe() const { return gemma_unsafe_; }
  const std::vector<uint16_t>& gemma_string_safe_chars() const { return gemma_safe_chars_; }

 private:
  std::vector<std::string> pieces_;
  std::array<std::vector<int32_t>, 256> by_first_byte_;
  std::vector<int32_t> json_safe_;
  std::vector<uint16_t> json_safe_chars_;
  std::vector<int32_t> gemma_safe_;
  std::vector<int32_t> gemma_unsafe_;
  std::vector<uint16_t> gemma_safe_chars_;
  std::vector<int32_t> json_unsafe_;
};

// The state of one sequence's constraint. While active, a token is allowed when the text
// generated under the constraint plus the token's piece is a prefix of some completion, or
// starts with a whole completion (a token may cover the last byte and more). It ends (and
// allows everything) once the text starts with a whole completion. Cost per step: one pass
// over the tokens whose first byte can come next (a small part of the vocabulary), only
// while active.
class CompletionConstraint final : public OutputConstraint {
 public:
  // `completions`: non-empty strings. An empty list gives an inactive constraint.
  CompletionConstraint(std::shared_ptr<const TokenPieces> pieces, std::vector<std::string> completions);

  bool active() const override { return active_; }
  // The allowed token ids, ascending, into `out` (cleared first). Empty when inactive, or
  // when no token can continue (the vocabulary cannot spell a completion): the caller then
  // samples unconstrained.
  void allowed(std::vector<int32_t>* out) const override;
  // Records a generated token; ends the constraint once a completion is complete (or the
  // token left every completion, which only an unconstrained step can do).
  void advance(int32_t token) override;
  std::string describe() const override { return text_; }
  const std::string& text() const { return text_; }

 private:
  std::shared_ptr<const TokenPieces> pieces_;
  std::vector<std::string> completions_;
  std::string text_;  // generated since the constraint started
  bool active_ = false;
};

}  // namespace gs
