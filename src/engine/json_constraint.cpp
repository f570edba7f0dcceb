// Token masks for structured output: the tokens whose bytes keep the JSON text on the grammar.
#include "engine/json_constraint.h"

#include <algorithm>
#include <array>
#include <iterator>

#include "core/log.h"

namespace gs {

JsonConstraint::JsonConstraint(std::shared_ptr<const TokenPieces> pieces,
                               std::shared_ptr<const text::JsonGrammar> grammar, JsonConstraintOptions options)
    : pieces_(std::move(pieces)), options_(std::move(options)), matcher_(grammar), scratch_(grammar) {
  if (pieces_ == nullptr || grammar == nullptr) {
    phase_ = Phase::kOver;
    return;
  }
  gemma_ = grammar->syntax() == text::JsonSyntax::kGemmaCall;
  if (options_.starts_in_thought && options_.think_close >= 0) phase_ = Phase::kThought;
  if (!options_.prefix.empty()) {
    // The value began in the prompt (a forced call's "{", a prefill's text): no prelude, the value goes on.
    if (!matcher_.feed(options_.prefix)) phase_ = Phase::kOver;
    if (phase_ != Phase::kOver) phase_ = Phase::kValue;
  }
  reserved_ = options_.end_tokens;
  reserved_.insert(reserved_.end(), options_.escape_tokens.begin(), options_.escape_tokens.end());
  for (int32_t id : {options_.think_open, options_.think_close}) {
    if (id >= 0) reserved_.push_back(id);
  }
  std::sort(reserved_.begin(), reserved_.end());
}

bool JsonConstraint::fits(int32_t id) const {
  const std::string& p = pieces_->piece(id);
  if (p.empty()) return false;
  scratch_.assign_state(matcher_);
  return scratch_.feed(p);
}

void JsonConstraint::allowed(std::vector<int32_t>* out) const {
  out->clear();
  if (!constrains_next()) return;
  // The JSON text's tokens: inside a free string every string-safe piece (a sorted list)
  // plus the few other pieces that fit; elsewhere, the pieces that begin with a byte that
  // can come next and fit whole.
  const int64_t room = matcher_.free_string_room();
  if (room >= 0) {
    std::vector<int32_t> others;
    for (int32_t id : gemma_ ? pieces_->gemma_string_unsafe() : pieces_->json_string_unsafe()) {
      if (fits(id)) others.push_back(id);
    }
    const std::vector<int32_t>& safe = gemma_ ? pieces_->gemma_string_safe() : pieces_->json_string_safe();
    out->reserve(safe.size() + others.size() + 8);
    if (room == INT64_MAX) {
      std::merge(safe.begin(), safe.end(), others.begin(), others.end(), std::back_inserter(*out));
    } else {
      const std::vector<uint16_t>& chars = gemma_ ? pieces_->gemma_string_safe_chars() : pieces_->json_string_safe_chars();
      for (size_t i = 0; i < safe.size(); ++i) {
        if (chars[i] <= room) out->push_back(safe[i]);
      }
      const size_t n = out->size();
      out->insert(out->end(), others.begin(), others.end());
      std::inplace_merge(out->begin(), out->begin() + static_cast<std::ptrdiff_t>(n), out->end());
    }
  } else if (!matcher_.done()) {
    // By first byte, then a filter on the second (most pieces that begin with a blank go on
    // with a letter), then the whole piece.
    text::JsonMatcher first = matcher_;
    text::JsonMatcher second = matcher_;
    std::array<bool, 256> second_ok{};
    for (int b = 0; b < 256; ++b) {
      first.assign_state(matcher_);
      if (!first.feed(static_cast<unsigned char>(b))) continue;
      for (int b2 = 0; b2 < 256; ++b2) {
        second.assign_state(first);
        second_ok[static_cast<size_t>(b2)] = second.feed(static_cast<unsigned char>(b2));
      }
      for (int32_t id : pieces_->starting_with(static_cast<unsigned char>(b))) {
        const std::string& p = pieces_->piece(id);
        if (p.size() == 1 || (second_ok[static_cast<unsigned char>(p[1])] && fits(id))) out->push_back(id);
      }
    }
    std::sort(out->begin(), out->end());
  }
  // The special tokens stand for themselves, not for their text (an end token's piece may
  // be printable): only where they are allowed as such.
  std::erase_if(*out, [this](int32_t id) { return std::binary_search(reserved_.begin(), reserved_.end(), id); });
  std::vector<int32_t> extra;
  if (phase_ == Phase::kStart) {
    if (!thought_done_ && options_.think_open >= 0) extra.push_back(options_.think_open);
    extra.insert(extra.end(), options_.escape_tokens.begin(), options_.escape_tokens.end());
  }
  if (matcher_.can_end()) extra.insert(extra.end(), options_.end_tokens.begin(), options_.end_tokens.end());
  std::sort(extra.begin(), extra.end());
  const size_t n = out->size();
  out->insert(out->end(), extra.begin(), extra.end());
  std::inplace_merge(out->begin(), out->begin() + static_cast<std::ptrdiff_t>(n), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
}

void JsonConstraint::advance(int32_t token) {
  const auto is_one_of = [token](const std::vector<int32_t>& ids) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
  };
  switch (phase_) {
    case Phase::kOver:
      return;
    case Phase::kThought:
      if (token == options_.think_close) {
        phase_ = Phase::kStart;
        thought_done_ = true;
      }
      return;
    case Phase::kStart:
      if (!thought_done_ && options_.think_open >= 0 && token == options_.think_open) {
        phase_ = Phase::kThought;
        return;
      }
      if (is_one_of(options_.escape_tokens)) {
        phase_ = Phase::kOver;
        return;
      }
      phase_ = Phase::kValue;
      [[fallthrough]];
    case Phase::kValue:
      if (is_one_of(options_.end_tokens)) {
        if (!matcher_.can_end()) GS_LOG_WARN("the output ended inside its JSON value '{}'", text_);
        phase_ = Phase::kOver;
        return;
      }
      if (token < 0 || token >= pieces_->n_vocab() || pieces_->piece(token).empty() ||
          !matcher_.feed(pieces_->piece(token))) {
        GS_LOG_WARN("token {} does not continue the JSON output '{}': the constraint ends", token, text_);
        phase_ = Phase::kOver;
        return;
      }
      text_ += pieces_->piece(token);
      if (text_.size() > 256) text_.erase(0, text_.size() - 256);
      return;
  }
}

}  // namespace gs
