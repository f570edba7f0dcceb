// Python/Jinja2 value printing as the Gemma 4 chat template relies on it.
#include "text/chat_values.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <cstdio>

#include "text/chat_format.h"

namespace gs::text::chat {
namespace {

bool is_python_space(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
  if (cp < 0x80) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Decodes the code point that starts at s[i] (assumes valid UTF-8; an invalid byte is
// returned as itself, length 1, and is not whitespace unless ASCII).
uint32_t decode_at(std::string_view s, size_t i, size_t* len) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i + k])); };
  if (b0 < 0x80 || i + 1 >= s.size()) {
    *len = 1;
    return b0 < 0x80 ? b0 : 0xFFFFFFFFu;
  }
  if ((b0 & 0xE0) == 0xC0) {
    *len = 2;
    return ((b0 & 0x1Fu) << 6) | (b(1) & 0x3F);
  }
  if ((b0 & 0xF0) == 0xE0 && i + 2 < s.size()) {
    *len = 3;
    return ((b0 & 0x0Fu) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  }
  if ((b0 & 0xF8) == 0xF0 && i + 3 < s.size()) {
    *len = 4;
    return ((b0 & 0x07u) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
  *len = 1;
  return 0xFFFFFFFFu;
}

// Length of the whitespace character that ends at s[end-1], or 0.
size_t trailing_space_len(std::string_view s, size_t end) {
  // A code point is at most 4 bytes: try the start positions end-1 .. end-4.
  for (size_t back = 1; back <= 4 && back <= end; ++back) {
    const size_t start = end - back;
    const auto lead = static_cast<uint8_t>(s[start]);
    if ((lead & 0xC0) == 0x80) continue;  // continuation byte: look further back
    size_t len = 0;
    const uint32_t cp = decode_at(s, start, &len);
    return (len == back && is_python_space(cp)) ? back : 0;
  }
  return 0;
}

// The digits of a big integer from parse_json_exact, else nothing.
std::optional<std::string> big_integer_digits(const nlohmann::json& v) {
  if (!v.is_binary() || !v.get_binary().has_subtype() || v.get_binary().subtype() != kBigIntegerSubtype) {
    return std::nullopt;
  }
  return std::string(v.get_binary().begin(), v.get_binary().end());
}

void python_repr_string(std::string_view s, std::string* out) {
  // Python picks single quotes unless the string holds ' and no ".
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char q = (has_single && !has_double) ? '"' : '\'';
  out->push_back(q);
  for (const char c : s) {
    const auto u = static_cast<uint8_t>(c);
    if (c == q || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (c == '\t') {
      out->append("\\t");
    } else if (u < 0x20 || u == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out->append(buf);
    } else {
      out->push_back(c);
    }
  }
  out->push_back(q);
}

void python_repr(const nlohmann::json& v, std::string* out) {
  if (std::optional<std::string> digits = big_integer_digits(v)) {
    out->append(*digits);
  } else if (v.is_string()) {
    python_repr_string(v.get_ref<const std::string&>(), out);
  } else if (v.is_array()) {
    out->push_back('[');
    bool first = true;
    for (const auto& item : v) {
      if (!first) out->append(", ");
      first = false;
      python_repr(item, out);
    }
    out->push_back(']');
  } else if (v.is_object()) {
    out->push_back('{');
    bool first = true;
    for (const auto& [k, item] : v.items()) {
      if (!first) out->append(", ");
      first = false;
      python_repr_string(k, out);
      out->append(": ");
      python_repr(item, out);
    }
    out->push_back('}');
  } else {
    out->append(python_str(v));
  }
}

}  // namespace

std::string_view python_strip(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size()) {
    size_t len = 0;
    const uint32_t cp = decode_at(s, begin, &len);
    if (!is_python_space(cp)) break;
    begin += len;
  }
  size_t end = s.size();
  while (end > begin) {
    const size_t len = trailing_space_len(s, end);
    if (len == 0) break;
    end -= len;
  }
  return s.substr(begin, end - begin);
}

std::string ascii_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string python_float_repr(double x) {
  if (x != x) return "nan";
  if (x == std::numeric_limits<double>::infinity()) return "inf";
  if (x == -std::numeric_limits<double>::infinity()) return "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));  // "-1.2345e+06"
  std::string out;
  if (!sci.empty() && sci[0] == '-') {
    out.push_back('-');
    sci.remove_prefix(1);
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (const char c : sci.substr(0, e)) {
    if (c != '.') digits.push_back(c);
  }
  int exp10 = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exp10);
  const int decpt = exp10 + 1;  // value = 0.DIGITS x 10^decpt
  const auto n = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (decpt >= n) {
      out += digits;
      out.append(static_cast<size_t>(decpt - n), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt));
      out.push_back('.');
      out += digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out.push_back(digits[0]);
  if (n > 1) {
    out.push_back('.');
    out += digits.substr(1);
  }
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  out += ebuf;
  return out;
}

std::string python_str(const nlohmann::json& v) {
  if (std::optional<std::string> digits = big_integer_digits(v)) return *digits;
  switch (v.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return "None";
    case nlohmann::json::value_t::boolean:
      return v.get<bool>() ? "True" : "False";
    case nlohmann::json::value_t::number_integer:
      return std::to_string(v.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return std::to_string(v.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return python_float_repr(v.get<double>());
    case nlohmann::json::value_t::string:
      return v.get<std::string>();
    case nlohmann::json::value_t::array:
    case nlohmann::json::value_t::object:
    case nlohmann::json::value_t::binary: {
      std::string out;
      python_repr(v, &out);
      return out;
    }
  }
  return {};
}

bool json_nesting_exceeds(const nlohmann::json& v, size_t limit) {
  std::vector<std::pair<const nlohmann::json*, size_t>> stack = {{&v, 0}};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    if (depth >= limit) return true;
    for (const auto& child : *node) {
      if (child.is_structured()) stack.emplace_back(&child, depth + 1);
    }
  }
  return false;
}

bool truthy(const nlohmann::json* v) {
  if (v == nullptr) return false;
  switch (v->type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return false;
    case nlohmann::json::value_t::boolean:
      return v->get<bool>();
    case nlohmann::json::value_t::number_integer:
      return v->get<int64_t>() != 0;
    case nlohmann::json::value_t::number_unsigned:
      return v->get<uint64_t>() != 0;
    case nlohmann::json::value_t::number_float:
      return v->get<double>() != 0.0;
    case nlohmann::json::value_t::string:  // json::empty() is false for every string
      return !v->get_ref<const std::string&>().empty();
    case nlohmann::json::value_t::binary:
      return !v->get_binary().empty();
    case nlohmann::json::value_t::array:
    case nlohmann::json::value_t::object:
      return !v->empty();
  }
  return false;
}

const nlohmann::json* member(const nlohmann::json* v, std::string_view key) {
  if (v == nullptr || !v->is_object()) return nullptr;
  const auto it = v->find(key);
  return it == v->end() ? nullptr : &*it;
}

std::vector<std::pair<std::string, const nlohmann::json*>> dictsort(const nlohmann::json& obj) {
  std::vector<std::pair<std::string, const nlohmann::json*>> items;
  if (!obj.is_object()) return items;
  for (const auto& [k, v] : obj.items()) items.emplace_back(k, &v);
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    const std::string la = [&] {
      std::string s = a.first;
      for (char& c : s) if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      return s;
    }();
    std::string lb = b.first;
    for (char& c : lb) if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return la < lb;
  });
  return items;
}

void format_argument(const nlohmann::json& v, bool escape_keys, std::string* out) {
  if (v.is_string()) {
    out->append(markup::kQuote);
    out->append(v.get_ref<const std::string&>());
    out->append(markup::kQuote);
  } else if (v.is_boolean()) {
    out->append(v.get<bool>() ? "true" : "false");
  } else if (v.is_object()) {
    out->push_back('{');
    bool first = true;
    for (const auto& [k, item] : dictsort(v)) {
      if (!first) out->push_back(',');
      first = false;
      if (escape_keys) {
        out->append(markup::kQuote);
        out->append(k);
        out->append(markup::kQuote);
      } else {
        out->append(k);
      }
      out->push_back(':');
      format_argument(*item, escape_keys, out);
    }
    out->push_back('}');
  } else if (v.is_array()) {
    out->push_back('[');
    bool first = true;
    for (const auto& item : v) {
      if (!first) out->push_back(',');
      first = false;
      format_argument(item, escape_keys, out);
    }
    out->push_back(']');
  } else {
    out->append(python_str(v));
  }
}

std::string strip_thinking(std::string_view text) {
  std::string result;
  size_t start = 0;
  while (true) {
    const size_t close = text.find(markup::kChannelClose, start);
    const std::string_view part =
        text.substr(start, close == std::string_view::npos ? std::string_view::npos : close - start);
    const size_t open = part.find(markup::kChannelOpen);
    result.append(open == std::string_view::npos ? part : part.substr(0, open));
    if (close == std::string_view::npos) break;
    start = close + markup::kChannelClose.size();
  }
  return std::string(python_strip(result));
}

}  // namespace gs::text::chat
