// Stop strings over raw streamed text (/v1/completions): text is released only once it can
// no longer be the start of a stop string, so no client ever sees part of one. The matching is
// text::StopScanner's (the chat parser's too): the first place where a stop string ends, the
// longest on a tie, in time linear in the text.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/stop_scanner.h"

namespace gs::server {

class StopMatcher {
 public:
  explicit StopMatcher(text::StopStrings stops);

  // Text that is safe to release after `text` arrives. Once a stop string matched, returns
  // the text before it and ignores everything after. Unarmed (min_tokens not yet reached), no
  // stop string matches, but text that may begin one is held as well.
  std::string feed(std::string_view text, bool armed = true);
  // End of output: releases what was held back.
  std::string finish();
  bool stopped() const { return matched_.has_value(); }
  const std::optional<std::string>& matched() const { return matched_; }
  // Bytes at the end of the text fed so far that are held back (they may begin a stop string).
  size_t held_bytes() const { return scanner_.held_bytes(); }

 private:
  text::StopScanner scanner_;
  std::optional<std::string> matched_;
};

}  // namespace gs::server
