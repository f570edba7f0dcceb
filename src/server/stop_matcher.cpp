// Stop-string hold-back over raw text.
#include "server/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace gs::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

std::string StopMatcher::feed(std::string_view text) {
  if (matched_) return {};
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});
  // The earliest full match wins.
  size_t best = std::string::npos;
  const std::string* best_stop = nullptr;
  for (const auto& s : stops_) {
    const size_t at = held_.find(s);
    if (at != std::string::npos && at < best) {
      best = at;
      best_stop = &s;
    }
  }
  if (best_stop) {
    matched_ = *best_stop;
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }
  // Hold the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    const size_t max_len = std::min(s.size() - 1, held_.size());
    for (size_t len = max_len; len > keep; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::finish() {
  if (matched_) return {};
  return std::exchange(held_, {});
}

}  // namespace gs::server
