// UTF-8 helpers: an assembler that never emits half a character, validation, code points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gs::text {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the UTF-8 sequence that starts with byte `lead` (1..4), or 0 when `lead` cannot
// start one (a continuation byte, 0xC0, 0xC1, 0xF5..0xFF).
int utf8_sequence_length(uint8_t lead);

// Bytes of a valid UTF-8 sequence at the start of `s`: 1..4, or 0 when `s` starts with an
// invalid or incomplete sequence (overlong forms, surrogates and > U+10FFFF are invalid).
int utf8_valid_prefix_length(std::string_view s);

bool is_valid_utf8(std::string_view s);

// `s` with every invalid sequence replaced by U+FFFD (one per maximal invalid subpart).
std::string sanitize_utf8(std::string_view s);

// Appends the UTF-8 encoding of `cp` (U+FFFD for surrogates and values > U+10FFFF).
void append_utf8(uint32_t cp, std::string* out);

// Collects bytes (for example token pieces) and returns only complete characters. An
// incomplete sequence at the end is held until the next push; an invalid one becomes U+FFFD.
class Utf8Assembler {
 public:
  // Complete, valid UTF-8 text that these bytes finish (may be empty).
  std::string push(std::string_view bytes);
  // Ends the stream: incomplete trailing bytes are dropped (they cannot become a
  // character any more). Returns "" and resets.
  std::string finish();
  size_t pending_bytes() const { return pending_.size(); }

 private:
  std::string pending_;
};

}  // namespace gs::text
