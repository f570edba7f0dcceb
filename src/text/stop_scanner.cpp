// StopScanner: per stop string, a Knuth-Morris-Pratt state over the text.
#include "text/stop_scanner.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace gs::text {

StopStrings::StopStrings(std::vector<std::string> stops) {
  auto table = std::make_shared<Table>();
  for (auto& s : stops) {
    if (s.empty()) continue;
    std::vector<uint32_t> border(s.size(), 0);
    uint32_t k = 0;
    for (size_t i = 1; i < s.size(); ++i) {
      while (k > 0 && s[i] != s[k]) k = border[k - 1];
      if (s[i] == s[k]) ++k;
      border[i] = k;
    }
    table->strings.push_back(std::move(s));
    table->borders.push_back(std::move(border));
  }
  if (!table->strings.empty()) table_ = std::move(table);
}

const std::vector<std::string>& StopStrings::strings() const {
  static const std::vector<std::string> kNone;
  return table_ ? table_->strings : kNone;
}

StopScanner::StopScanner(StopStrings stops) : stops_(std::move(stops)) { state_.assign(stops_.strings().size(), 0); }

void StopScanner::append_pending(size_t n, std::string_view text, std::string* out) const {
  const size_t from_held = std::min(n, held_len_);
  if (from_held > 0) out->append(stops()[held_stop_], 0, from_held);
  if (n > held_len_) out->append(text.substr(0, n - held_len_));
}

std::optional<size_t> StopScanner::feed(std::string_view text, bool armed, std::string* released) {
  if (matched_) return std::nullopt;
  if (stops_.empty()) {
    released->append(text);
    return std::nullopt;
  }
  const std::vector<std::string>& strings = stops_.strings();
  for (size_t j = 0; j < text.size(); ++j) {
    const char c = text[j];
    size_t best = SIZE_MAX;  // the longest stop string that ends at this byte
    for (size_t i = 0; i < strings.size(); ++i) {
      const std::string& s = strings[i];
      const std::vector<uint32_t>& border = stops_.border(i);
      uint32_t st = state_[i];
      while (st > 0 && s[st] != c) st = border[st - 1];
      if (s[st] == c) ++st;
      if (st == s.size()) {
        if (armed && (best == SIZE_MAX || s.size() > strings[best].size())) best = i;
        st = border[st - 1];  // unarmed (or not the longest): go on as if it had not ended
      }
      state_[i] = st;
    }
    if (best != SIZE_MAX) {
      // It ends at byte held_len_ + j of the pending text and lies within it: its state grew
      // by at most one a byte from at most held_len_.
      append_pending(held_len_ + j + 1 - strings[best].size(), text, released);
      matched_ = true;
      held_len_ = 0;
      return best;
    }
  }
  size_t longest = 0;
  for (size_t i = 1; i < strings.size(); ++i) {
    if (state_[i] > state_[longest]) longest = i;
  }
  const size_t keep = state_[longest];
  append_pending(held_len_ + text.size() - keep, text, released);
  held_len_ = keep;
  held_stop_ = longest;
  return std::nullopt;
}

std::string StopScanner::flush() {
  std::string out;
  if (!matched_ && held_len_ > 0) out.assign(stops()[held_stop_], 0, held_len_);
  held_len_ = 0;
  std::fill(state_.begin(), state_.end(), 0);
  return out;
}

}  // namespace gs::text
