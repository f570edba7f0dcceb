// Helpers for the structured-output grammar tests (json_grammar_test, json_pattern_test).
#pragma once

#include <vector>

#include "text/json_grammar.h"

namespace gs::text::test_util {

// The bytes `m` takes next (each tested on a copy), for random walks over a matcher.
inline std::vector<unsigned char> bytes_taken(const JsonMatcher& m) {
  std::vector<unsigned char> ok;
  for (int b = 0; b < 256; ++b) {
    JsonMatcher t = m;
    if (t.feed(static_cast<unsigned char>(b))) ok.push_back(static_cast<unsigned char>(b));
  }
  return ok;
}

}  // namespace gs::text::test_util
