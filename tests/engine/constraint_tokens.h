// Shared by the output-constraint tests on the bundled shakes vocabulary: a token's id by its
// text, a byte-fallback token's id, a constraint's mask and a lookup in it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <vector>

#include "common/shakes.h"
#include "engine/output_constraint.h"

namespace gs::test {

// The id of the shakes vocabulary's token spelled `text` (a test failure and -1 when it has none).
inline int32_t token(std::string_view text) {
  auto id = shakes_tokenizer()->find_token(text);
  EXPECT_TRUE(id.has_value()) << text;
  return id.value_or(-1);
}

// The id of the byte-fallback token <0xNN> for `ch`.
inline int32_t byte_token(char ch) {
  char name[8];
  std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(ch));
  return token(name);
}

// The ids `c` allows next, ascending.
inline std::vector<int32_t> mask(const OutputConstraint& c) {
  std::vector<int32_t> out;
  c.allowed(&out);
  return out;
}

// Whether `id` is in `ids` (ascending, as mask() gives them).
inline bool has(const std::vector<int32_t>& ids, int32_t id) { return std::binary_search(ids.begin(), ids.end(), id); }

}  // namespace gs::test
