// UTF-8 validation and the character assembler used by the detokenizer.
#include "text/utf8.h"

namespace gs::text {

int utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;  // continuation byte or overlong 2-byte lead
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF5) return 4;
  return 0;
}

namespace {

// Result of looking at the sequence that starts s: its length when valid, 0 when invalid,
// -1 when it is a valid but incomplete prefix (more bytes could complete it).
int classify(std::string_view s) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  const int n = utf8_sequence_length(b0);
  if (n == 0) return 0;
  if (n == 1) return 1;
  for (int i = 1; i < n; ++i) {
    if (static_cast<size_t>(i) >= s.size()) return -1;
    const auto b = static_cast<uint8_t>(s[i]);
    // The second byte's range depends on the lead (no overlongs, surrogates, > U+10FFFF).
    uint8_t lo = 0x80;
    uint8_t hi = 0xBF;
    if (i == 1) {
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    }
    if (b < lo || b > hi) return 0;
  }
  return n;
}

}  // namespace

int utf8_valid_prefix_length(std::string_view s) {
  if (s.empty()) return 0;
  const int c = classify(s);
  return c < 0 ? 0 : c;
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const int n = utf8_valid_prefix_length(s.substr(i));
    if (n == 0) return false;
    i += static_cast<size_t>(n);
  }
  return true;
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const int c = classify(s.substr(i));
    if (c > 0) {
      out.append(s.substr(i, static_cast<size_t>(c)));
      i += static_cast<size_t>(c);
      continue;
    }
    // Maximal invalid subpart: the lead plus the continuation bytes that were still valid.
    size_t j = i + 1;
    const int n = utf8_sequence_length(static_cast<uint8_t>(s[i]));
    while (n > 1 && j < s.size() && j < i + static_cast<size_t>(n) &&
           classify(s.substr(i, j - i + 1)) == -1) {
      ++j;
    }
    out.append(kReplacementChar);
    i = j;
  }
  return out;
}

void append_utf8(uint32_t cp, std::string* out) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
    out->append(kReplacementChar);
    return;
  }
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Utf8Assembler::push(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    const std::string_view rest(pending_.data() + i, pending_.size() - i);
    const int c = classify(rest);
    if (c > 0) {
      out.append(rest.substr(0, static_cast<size_t>(c)));
      i += static_cast<size_t>(c);
    } else if (c < 0) {
      break;  // incomplete: wait for more bytes
    } else {
      // Invalid: replace the maximal invalid subpart, as sanitize_utf8 does.
      size_t j = 1;
      const int n = utf8_sequence_length(static_cast<uint8_t>(rest[0]));
      while (n > 1 && j < rest.size() && j < static_cast<size_t>(n) &&
             classify(rest.substr(0, j + 1)) == -1) {
        ++j;
      }
      out.append(kReplacementChar);
      i += j;
    }
  }
  pending_.erase(0, i);
  return out;
}

std::string Utf8Assembler::finish() {
  pending_.clear();
  return {};
}

}  // namespace gs::text
