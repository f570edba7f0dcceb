// Stop-string hold-back over raw text.
#include "server/stop_matcher.h"

#include <utility>

namespace gs::server {

StopMatcher::StopMatcher(text::StopStrings stops) : scanner_(std::move(stops)) {}

std::string StopMatcher::feed(std::string_view text, bool armed) {
  std::string out;
  if (const std::optional<size_t> hit = scanner_.feed(text, armed, &out)) matched_ = scanner_.stops()[*hit];
  return out;
}

std::string StopMatcher::finish() {
  if (matched_) return {};
  return scanner_.flush();
}

}  // namespace gs::server
