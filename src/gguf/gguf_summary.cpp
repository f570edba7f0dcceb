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

void append_escaped(std::string& out, std::string_view s, size_t max_bytes, bool cut_marker = true) {
  const size_t n = std::min(s.size(), max_bytes);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
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
