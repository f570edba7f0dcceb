// Stop strings over raw streamed text (/v1/completions): text is released only once it can
// no longer be the start of a stop string, so no client ever sees part of one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gs::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Text that is safe to release after `text` arrives. Once a stop string matched, returns
  // the text before it and ignores everything after.
  std::string feed(std::string_view text);
  // End of output: releases what was held back.
  std::string finish();
  bool stopped() const { return matched_.has_value(); }
  const std::optional<std::string>& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  std::optional<std::string> matched_;
};

}  // namespace gs::server
