// JSON text read as Python's json.loads reads it for the template: integers of any size exact
// (and back to nlohmann's reading for readers of numbers, and back to JSON text).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "text/chat_values.h"

namespace gs::text::chat {

namespace {

using nlohmann::json;

bool integer_literal(const std::string& s) {
  size_t i = s.empty() || s[0] != '-' ? 0 : 1;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

// nlohmann's DOM builder, except that an integer literal beyond int64/uint64 (which nlohmann
// reads as a double) becomes a big-integer value holding its digits.
class ExactBuilder : public json::json_sax_t {
 public:
  explicit ExactBuilder(json* root) : root_(root) {}

  bool null() override { return put(json(nullptr)); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t& lexeme) override {
    if (integer_literal(lexeme)) {
      return put(json::binary(std::vector<std::uint8_t>(lexeme.begin(), lexeme.end()), kBigIntegerSubtype));
    }
    return put(json(v));
  }
  bool string(string_t& v) override { return put(json(std::move(v))); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  // Where the next value goes: the root, the open array's end or the open object's key.
  json* slot() {
    if (stack_.empty()) return root_;
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(nullptr);
      return &top.back();
    }
    return &top[key_];
  }
  bool put(json v) {
    *slot() = std::move(v);
    return true;
  }
  bool open(json empty) {
    json* s = slot();
    *s = std::move(empty);
    stack_.push_back(s);
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  json* root_;
  std::vector<json*> stack_;  // open containers (pointers stay valid: only their last child grows)
  std::string key_;
};

}  // namespace

json parse_json_exact(std::string_view text) {
  json out;
  ExactBuilder builder(&out);
  const bool ok = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json, /*strict=*/true);
  if (!ok) return json(json::value_t::discarded);
  return out;
}

nlohmann::json plain_json(const json& v) {
  if (v.is_binary()) {
    const json::binary_t& b = v.get_binary();
    if (b.has_subtype() && b.subtype() == kBigIntegerSubtype) {
      const std::string digits(b.begin(), b.end());
      return json(std::strtod(digits.c_str(), nullptr));  // as nlohmann reads the literal
    }
    return v;
  }
  if (v.is_object()) {
    json out = json::object();
    for (const auto& [k, item] : v.items()) out[k] = plain_json(item);
    return out;
  }
  if (v.is_array()) {
    json out = json::array();
    for (const auto& item : v) out.push_back(plain_json(item));
    return out;
  }
  return v;
}

namespace {

void append_exact(const json& v, std::string* out) {
  if (v.is_binary()) {
    const json::binary_t& b = v.get_binary();
    if (b.has_subtype() && b.subtype() == kBigIntegerSubtype) {
      out->append(b.begin(), b.end());
      return;
    }
  }
  if (v.is_object()) {
    out->push_back('{');
    bool first = true;
    for (const auto& [k, item] : v.items()) {
      if (!first) out->push_back(',');
      first = false;
      out->append(json(k).dump(-1, ' ', false, json::error_handler_t::replace));
      out->push_back(':');
      append_exact(item, out);
    }
    out->push_back('}');
    return;
  }
  if (v.is_array()) {
    out->push_back('[');
    bool first = true;
    for (const auto& item : v) {
      if (!first) out->push_back(',');
      first = false;
      append_exact(item, out);
    }
    out->push_back(']');
    return;
  }
  out->append(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

std::string dump_json_exact(const json& v) {
  std::string out;
  append_exact(v, &out);
  return out;
}

}  // namespace gs::text::chat
