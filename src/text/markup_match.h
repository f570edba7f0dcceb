// Prefix matching of markup tokens in a text that may end inside one (streamed input).
#pragma once

#include <string_view>

namespace gs::text {

enum class MarkupMatch { kNone, kPartial, kFull };

// kFull when `s` starts with `marker`; kPartial when `s` is a strict prefix of it (more input
// may complete it); else kNone.
inline MarkupMatch match_markup(std::string_view s, std::string_view marker) {
  if (s.size() >= marker.size()) {
    return s.compare(0, marker.size(), marker) == 0 ? MarkupMatch::kFull : MarkupMatch::kNone;
  }
  return marker.compare(0, s.size(), s) == 0 ? MarkupMatch::kPartial : MarkupMatch::kNone;
}

}  // namespace gs::text
