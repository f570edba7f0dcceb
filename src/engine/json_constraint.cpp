// Token masks for structured output: the tokens whose bytes keep the JSON text on the grammar.
#include "engine/json_constraint.h"

#include <algorithm>
#include <iterator>

#include "core/log.h"

namespace gs {

JsonConstraint::JsonConstraint(std::shared_ptr<const TokenPieces> pieces,
                               std::shared_ptr<const text::JsonGrammar> grammar, JsonConstraintOptions options)
    : pieces_(std::move(pieces)), options_(std::move(options)), matcher_(grammar), scratch_(grammar) {
  if (pieces_ == nullptr || grammar == nullptr) phase_ = Phase::kOver;
}

bool JsonConstraint::fits(int32_t id) const {
  const std::string& p = pieces_->piece(id);
  if (p.empty()) return false;
  scratch_ = matcher_;
  return scratch_.feed(p);
}

void JsonConstraint::allowed(std::vector<int32_t>* out) const {
  out->clear();
  if (!constrains_next()) return;
  std::vector<int32_t> extra;  // besides the JSON text's own tokens
  if (phase_ == Phase::kStart) {
    if (!thought_done_ && options_.think_open >= 0) extra.push_back(options_.think_open);
    extra.insert(extra.end(), options_.escape_tokens.begin(), options_.escape_tokens.end());
  }
  if (matcher_.can_end()) extra.insert(extra.end(), options_.end_tokens.begin(), options_.end_tokens.end());
  if (!matcher_.done() && matcher_.in_free_string()) {
    // Every string-safe piece fits (a sorted list, merged in); of the others, only some do.
    for (int32_t id : pieces_->json_string_unsafe()) {
      if (fits(id)) extra.push_back(id);
    }
    std::sort(extra.begin(), extra.end());
    const std::vector<int32_t>& safe = pieces_->json_string_safe();
    out->reserve(safe.size() + extra.size());
    std::merge(safe.begin(), safe.end(), extra.begin(), extra.end(), std::back_inserter(*out));
  } else {
    if (!matcher_.done()) {
      for (int b = 0; b < 256; ++b) {
        scratch_ = matcher_;
        if (!scratch_.feed(static_cast<unsigned char>(b))) continue;
        for (int32_t id : pieces_->starting_with(static_cast<unsigned char>(b))) {
          if (fits(id)) out->push_back(id);
        }
      }
    }
    out->insert(out->end(), extra.begin(), extra.end());
    std::sort(out->begin(), out->end());
  }
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
      if (matcher_.can_end() && is_one_of(options_.end_tokens)) {
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
      return;
  }
}

}  // namespace gs
