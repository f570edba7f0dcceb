// Token masks that keep generated text on one of a few allowed completions.
#include "engine/completion_constraint.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "text/json_grammar.h"

namespace gs {

TokenPieces::TokenPieces(const text::Tokenizer& tokenizer) {
  const int32_t n = tokenizer.n_vocab();
  pieces_.resize(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    pieces_[static_cast<size_t>(id)] = std::string(tokenizer.token_to_piece(id, /*render_special=*/false));
    const std::string& p = pieces_[static_cast<size_t>(id)];
    if (p.empty()) continue;
    by_first_byte_[static_cast<unsigned char>(p[0])].push_back(id);
    const auto chars = static_cast<uint16_t>(std::min<int64_t>(text::utf8_chars(p), UINT16_MAX));
    if (text::json_string_safe(p)) {
      json_safe_.push_back(id);
      json_safe_chars_.push_back(chars);
    } else {
      json_unsafe_.push_back(id);
    }
    if (text::gemma_string_safe(p)) {
      gemma_safe_.push_back(id);
      gemma_safe_chars_.push_back(chars);
    } else {
      gemma_unsafe_.push_back(id);
    }
  }
}

CompletionConstraint::CompletionConstraint(std::shared_ptr<const TokenPieces> pieces,
                                           std::vector<std::string> completions)
    : pieces_(std::move(pieces)), completions_(std::move(completions)) {
  std::erase_if(completions_, [](const std::string& c) { return c.empty(); });
  active_ = pieces_ != nullptr && !completions_.empty();
}

void CompletionConstraint::allowed(std::vector<int32_t>* out) const {
  out->clear();
  if (!active_) return;
  // What each completion still needs; the first bytes pick the candidate tokens.
  for (const std::string& c : completions_) {
    if (c.size() <= text_.size() || c.compare(0, text_.size(), text_) != 0) continue;
    const std::string_view rest = std::string_view(c).substr(text_.size());
    const auto b = static_cast<unsigned char>(rest[0]);
    for (int32_t id : pieces_->starting_with(b)) {
      const std::string& p = pieces_->piece(id);
      // p covers a prefix of the rest, or the whole rest and more.
      const bool ok = p.size() <= rest.size() ? rest.compare(0, p.size(), p) == 0
                                              : std::string_view(p).compare(0, rest.size(), rest) == 0;
      if (ok) out->push_back(id);
    }
  }
  // Two completions with the same next byte add the same tokens twice.
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
}

void CompletionConstraint::advance(int32_t token) {
  if (!active_) return;
  if (token < 0 || token >= pieces_->n_vocab()) {
    active_ = false;
    return;
  }
  text_ += pieces_->piece(token);
  bool open = false;
  for (const std::string& c : completions_) {
    if (text_.size() >= c.size() && text_.compare(0, c.size(), c) == 0) {
      active_ = false;  // a whole completion: the constraint is met
      return;
    }
    if (c.compare(0, text_.size(), text_) == 0) open = true;
  }
  if (!open) active_ = false;  // off every completion: nothing left to constrain
}

}  // namespace gs
