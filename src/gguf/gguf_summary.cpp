// Totals and value text for inspecting a GGUF file.
#include "gguf/gguf_summary.h"

#include <fmt/format.h>

#include <algorithm>

namespace gs::gguf {

GgufSummary summarize(const GgufFile& file) {
  GgufSummary s;
  s.n_tensors = file.tensors().size();
  for (const auto& t : file.tensors()) {
    s.n_params += static_cast<uint64_t>(t.n_elements);
    s.tensor_bytes += t.size_bytes;
    auto it = std::find_if(s.by_type.begin(), s.by_type.end(), [&](const TypeTotal& x) { return x.type == t.type; });
    if (it == s.by_type.end()) {
      s.by_type.push_back(TypeTotal{t.type});
      it = s.by_type.end() - 1;
    }
    ++it->n_tensors;
    it->n_elements += static_cast<uint64_t>(t.n_elements);
    it->bytes += t.size_bytes;
  }
  std::sort(s.by_type.begin(), s.by_type.end(), [](const TypeTotal& a, const TypeTotal& b) {
    return static_cast<uint32_t>(a.type) < static_cast<uint32_t>(b.type);
  });
  return s;
}

namespace {

// Length of the well-formed UTF-8 sequence of two to four bytes at s[i] (RFC 3629: no overlong
// forms, surrogates or code points above U+10FFFF), else 0.
size_t utf8_sequence_at(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + len > s.size() || b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (b(k) < 0x80 || b(k) > 0xbf) return 0;
  }
  return len;
}

// Control bytes, quotes, backslashes and bytes that are not well-formed UTF-8 escaped, so that
// the text is printable and valid UTF-8 (a JSON document, a terminal); cut after max_bytes of
// the input, never inside a character.
void append_escaped(std::string& out, std::string_view s, size_t max_bytes, bool cut_marker = true) {
  const size_t n = std::min(s.size(), max_bytes);
  size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t len = utf8_sequence_at(s, i);
      if (len == 0) {
        out += fmt::format("\\x{:02x}", c);
        ++i;
        continue;
      }
      if (i + len > n) break;  // the character crosses the cut
      out.append(s.substr(i, len));
      i += len;
      continue;
    }
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  if (cut_marker && s.size() > max_bytes) out += fmt::format("...({} bytes)", s.size());
}

void append_string(std::string& out, const std::string& s, size_t max_bytes) {
  out += '"';
  append_escaped(out, s, max_bytes, false);
  out += '"';
  if (s.size() > max_bytes) out += fmt::format("...({} bytes)", s.size());
}

void append_value(std::string& out, const Value& v, size_t max_string_bytes) {
  switch (v.type) {
    case ValueType::kU8:
    case ValueType::kU16:
    case ValueType::kU32:
    case ValueType::kU64: out += fmt::format("{}", std::get<uint64_t>(v.data)); return;
    case ValueType::kI8:
    case ValueType::kI16:
    case ValueType::kI32:
    case ValueType::kI64: out += fmt::format("{}", std::get<int64_t>(v.data)); return;
    case ValueType::kF32: out += fmt::format("{}", static_cast<float>(std::get<double>(v.data))); return;
    case ValueType::kF64: out += fmt::format("{}", std::get<double>(v.data)); return;
    case ValueType::kBool: out += std::get<bool>(v.data) ? "true" : "false"; return;
    case ValueType::kString: append_string(out, std::get<std::string>(v.data), max_string_bytes); return;
    case ValueType::kArray: {
      const auto& a = std::get<ArrayValue>(v.data);
      out += '[';
      for (size_t i = 0; i < a.items.size(); ++i) {
        if (i) out += ", ";
        append_value(out, a.items[i], std::min<size_t>(max_string_bytes, 32));  // items stay short
      }
      if (a.items.size() < a.total_count) out += a.items.empty() ? "..." : ", ...";
      out += ']';
      if (a.items.size() < a.total_count) out += fmt::format(" ({} items)", a.total_count);
      return;
    }
  }
}

}  // namespace

std::string format_value(const Value& v, size_t max_string_bytes) {
  std::string out;
  append_value(out, v, max_string_bytes);
  return out;
}

std::string escape_text(std::string_view s, size_t max_bytes) {
  std::string out;
  append_escaped(out, s, max_bytes);
  return out;
}

std::string format_type(const KeyValue& kv) {
  if (kv.type != ValueType::kArray) return std::string(value_type_name(kv.type));
  return fmt::format("array[{}]", value_type_name(kv.elem_type));
}

std::string format_count(uint64_t n) {
  if (n >= 1'000'000'000) return fmt::format("{:.2f} B", static_cast<double>(n) / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.2f} M", static_cast<double>(n) / 1e6);
  if (n >= 1'000) return fmt::format("{:.2f} K", static_cast<double>(n) / 1e3);
  return fmt::format("{}", n);
}

std::string format_bytes(uint64_t n) {
  if (n >= 1'000'000'000) return fmt::format("{:.2f} GB", static_cast<double>(n) / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.2f} MB", static_cast<double>(n) / 1e6);
  if (n >= 1'000) return fmt::format("{:.2f} KB", static_cast<double>(n) / 1e3);
  return fmt::format("{} B", n);
}

}  // namespace gs::gguf
