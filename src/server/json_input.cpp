// Safe JSON body parsing and typed field readers.
#include "server/json_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace gs::server {

namespace {

// What a body would cost nlohmann, counted outside strings: the deepest array/object
// nesting and the objects, arrays and strings (keys too) it would allocate. Stops early once
// a limit is passed. Malformed text is left for the real parser to report.
struct JsonShape {
  int depth = 0;
  size_t heap_values = 0;
};

JsonShape shape_of(std::string_view body, int depth_limit, size_t heap_limit) {
  JsonShape shape;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        if (++shape.heap_values > heap_limit) return shape;
        break;
      case '[':
      case '{':
        if (++depth > shape.depth) shape.depth = depth;
        if (shape.depth > depth_limit) return shape;
        if (++shape.heap_values > heap_limit) return shape;
        break;
      case ']':
      case '}': --depth; break;
      default: break;
    }
  }
  return shape;
}

// The keys and array indices down to the value a SAX pass is reading: a handler that builds
// nothing, the base of the two below (each hides the one event it acts on).
class SaxPath {
 public:
  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(nlohmann::json::number_integer_t) { return value(); }
  bool number_unsigned(nlohmann::json::number_unsigned_t) { return value(); }
  bool number_float(nlohmann::json::number_float_t, const nlohmann::json::string_t&) { return value(); }
  bool string(nlohmann::json::string_t&) { return value(); }
  bool binary(nlohmann::json::binary_t&) { return value(); }
  bool start_object(size_t) { return open(false); }
  bool key(nlohmann::json::string_t& k) {
    frames_.back().key = k;
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(size_t) { return open(true); }
  bool end_array() { return close(); }
  bool parse_error(size_t, const std::string&, const nlohmann::json::exception&) { return false; }

 protected:
  struct Frame {
    bool array = false;
    size_t next = 0;  // arrays: the index of the next element
    std::string key;  // objects: the key last read
  };

  // A value starts in the innermost container (an array counts it).
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().next;
    return true;
  }
  bool open(bool array) {
    value();
    frames_.push_back(Frame{array, 0, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }
  // The index of the element being read in array frame i: outer arrays have counted the
  // container it is in; the innermost has not yet counted the value being read.
  size_t index_at(size_t i) const { return i + 1 == frames_.size() ? frames_[i].next : frames_[i].next - 1; }

  // The path of the value being read ("" at the top; "messages[2].content", a key that is
  // not a plain name as ["a b"]).
  std::string path() const {
    std::string out;
    for (size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      if (f.array) {
        out += fmt::format("[{}]", index_at(i));
        continue;
      }
      const bool plain = !f.key.empty() && (std::isalpha(static_cast<unsigned char>(f.key[0])) || f.key[0] == '_') &&
                         std::all_of(f.key.begin(), f.key.end(), [](char c) {
                           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                         });
      if (plain) {
        out += out.empty() ? f.key : "." + f.key;
      } else {
        out += "[" + nlohmann::json(f.key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "]";
      }
    }
    return out;
  }

  std::vector<Frame> frames_;
};

// Where nlohmann's parser stopped: the path to the value being read, and the byte offset and
// token that parse_error reports. Run a second time over a body whose parse failed, to say
// where.
class FailureLocator : public SaxPath {
 public:
  bool parse_error(size_t position, const std::string& token, const nlohmann::json::exception&) {
    failed_ = true;
    position_ = position;
    token_ = token;
    path_ = path();
    return false;
  }

  bool failed() const { return failed_; }
  // The byte offset just past the token that failed, the token, and its path ("" at the top;
  // "messages[2].content", a key that is not a plain name as ["a b"]).
  size_t position() const { return position_; }
  const std::string& token() const { return token_; }
  const std::string& where() const { return path_; }

 private:
  bool failed_ = false;
  size_t position_ = 0;
  std::string token_;
  std::string path_;
};

// Where a body writes an integer past 64 bits that nlohmann reads as the double -2^63: the
// JSON pointer of each such number. Run only over a body that may hold one.
class LowIntegerFinder : public SaxPath {
 public:
  bool number_float(nlohmann::json::number_float_t v, const nlohmann::json::string_t& lexeme) {
    const bool integer = lexeme.find_first_of(".eE") == std::string::npos;
    if (integer && v == -9223372036854775808.0) found.push_back(pointer());
    return value();
  }

  std::vector<nlohmann::json::json_pointer> found;

 private:
  // The pointer of the value being read: each frame's key (escaped) or index.
  nlohmann::json::json_pointer pointer() const {
    std::string out;
    for (size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      out += '/';
      if (f.array) {
        out += std::to_string(index_at(i));
        continue;
      }
      for (const char c : f.key) {
        if (c == '~') {
          out += "~0";
        } else if (c == '/') {
          out += "~1";
        } else {
          out += c;
        }
      }
    }
    return nlohmann::json::json_pointer(out);
  }
};

// nlohmann reads an integer written past 64 bits as a double, and those from
// -9223372036854775809 to about -2^63 - 1024 round to -2^63 exactly: the same double as the
// valid int64 -2^63 written as `-9223372036854775808.0`, so `seed` took them as that seed
// (decision 0053). Each such value becomes the next double below, which no integer field's
// range holds; every other integer past 64 bits already reads as a double outside int64. The
// readers that print such integers exactly read the body's text again (tool_integers.h).
void push_low_integers_out_of_range(std::string_view body, nlohmann::json* value) {
  if (body.find("-922337203685477") == std::string_view::npos) return;  // no literal rounds there
  LowIntegerFinder finder;
  nlohmann::json::sax_parse(body.begin(), body.end(), &finder);
  for (const auto& at : finder.found) {
    if (!value->contains(at)) continue;
    (*value)[at] = std::nextafter(-9223372036854775808.0, -std::numeric_limits<double>::infinity());
  }
}

// Whether the decimal literal `lexeme` (JSON number syntax) is exactly the integer `n`.
bool literal_is_exactly(std::string_view lexeme, uint64_t n) {
  size_t i = 0;
  if (i < lexeme.size() && lexeme[i] == '-') ++i;
  std::string digits;
  int64_t exponent = 0;
  bool fraction = false;
  for (; i < lexeme.size() && lexeme[i] != 'e' && lexeme[i] != 'E'; ++i) {
    if (lexeme[i] == '.') {
      fraction = true;
    } else {
      digits += lexeme[i];
      if (fraction) --exponent;
    }
  }
  if (i < lexeme.size()) {  // the exponent: a sign and digits (lexemes that long are refused below)
    int64_t e = 0;
    bool negative = false;
    for (++i; i < lexeme.size(); ++i) {
      if (lexeme[i] == '-') negative = true;
      if (lexeme[i] >= '0' && lexeme[i] <= '9' && e < 100000) e = e * 10 + (lexeme[i] - '0');
    }
    exponent += negative ? -e : e;
  }
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return n == 0;
  digits.erase(0, first);
  while (!digits.empty() && digits.back() == '0') {
    digits.pop_back();
    ++exponent;
  }
  if (exponent < 0 || exponent > 20) return false;  // a fraction, or past 2^64
  digits.append(static_cast<size_t>(exponent), '0');
  return digits == std::to_string(n);
}

// Where a request body's top-level member is a number in the range where an integer field
// could take it but a double cannot hold it (2^53 <= |value| < 2^64, written with a fraction
// or an exponent, whose value is not the double nlohmann rounds it to: `9007199254740993.0`,
// `1.0000000000000001e17`): the first such number's text and path. Integer literals are exact
// there (int64 and uint64 hold them). Only top-level members: the only integer fields whose
// range reaches 2^53 are top-level (`seed`); every other integer field refuses such a value by
// its range, and numbers inside messages, tools, schemas and tool-call inputs are the client's
// or the model's data, which a replayed history must be able to carry.
class InexactNumberFinder : public SaxPath {
 public:
  bool number_float(nlohmann::json::number_float_t v, const nlohmann::json::string_t& lexeme) {
    if (frames_.size() != 1 || frames_.front().array) return value();
    const double m = std::fabs(v);
    // Integer literals past 64 bits are nlohmann's floats too, outside every integer field's
    // range (push_low_integers_out_of_range): not this check's.
    const bool written_as_float = lexeme.find_first_of(".eE") != std::string::npos;
    if (!found_ && written_as_float && m >= 9007199254740992.0 && m < 18446744073709551616.0 &&
        !literal_is_exactly(lexeme, static_cast<uint64_t>(m))) {
      found_ = true;
      lexeme_ = lexeme;
      rounded_ = v;
      path_ = path();
    }
    return found_ ? false : value();
  }
  bool found() const { return found_; }
  const std::string& lexeme() const { return lexeme_; }
  double rounded() const { return rounded_; }
  const std::string& where() const { return path_; }

 private:
  bool found_ = false;
  std::string lexeme_;
  double rounded_ = 0;
  std::string path_;
};

// Whether the object `v` has a top-level member that may be such a number (a look at the
// parsed value, cheaper than a second pass over the text, which runs only where it finds one).
bool holds_large_float(const nlohmann::json& v) {
  for (const auto& e : v) {
    if (!e.is_number_float()) continue;
    const double m = std::fabs(e.get<double>());
    if (m >= 9007199254740992.0 && m < 18446744073709551616.0) return true;
  }
  return false;
}

constexpr std::string_view kRequestBody = "the request body";

// The 400 for a number that no double holds (nlohmann's out_of_range 406: "1e400", a
// 400-digit integer), naming the field it was the value of and its byte offset. The body of
// a request puts the field first (the error's param); a JSON text inside a field (`what`)
// names that field first.
Status number_out_of_range(std::string_view body, std::string_view what) {
  FailureLocator where;
  nlohmann::json::sax_parse(body.begin(), body.end(), &where);
  std::string token = where.failed() ? where.token() : std::string();
  const size_t offset = where.position() >= token.size() ? where.position() - token.size() : 0;
  if (token.size() > 40) token = token.substr(0, 32) + fmt::format("... ({} characters)", token.size());
  const std::string what_is_wrong =
      fmt::format("number out of range: {} is beyond what a double holds (about 1.8e308)", token);
  if (what == kRequestBody && !where.where().empty()) {
    return make_status(StatusCode::kInvalidArgument, "{}: {} (byte offset {} of {})", where.where(), what_is_wrong,
                       offset, what);
  }
  return make_status(StatusCode::kInvalidArgument, "{} is not valid JSON: {} at byte offset {}{}", what, what_is_wrong,
                     offset, where.where().empty() ? "" : fmt::format(" ({})", where.where()));
}

}  // namespace

std::string field_name(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  std::string s(path);
  s += '.';
  s += key;
  return s;
}

const char* json_type_name(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "object";
    case nlohmann::json::value_t::array: return "array";
    case nlohmann::json::value_t::string: return "string";
    case nlohmann::json::value_t::boolean: return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "number";
    case nlohmann::json::value_t::binary: return "binary";
    case nlohmann::json::value_t::discarded: return "invalid";
  }
  return "invalid";
}

Result<nlohmann::json> parse_json_object(std::string_view body, int max_depth, std::string_view what) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return make_status(StatusCode::kInvalidArgument, "{} is empty; expected a JSON object", what);
  }
  const JsonShape shape = shape_of(body, max_depth, kMaxJsonHeapValues);
  if (shape.depth > max_depth) {
    return make_status(StatusCode::kInvalidArgument, "{} is JSON nested deeper than {} levels", what, max_depth);
  }
  if (shape.heap_values > kMaxJsonHeapValues) {
    return make_status(StatusCode::kInvalidArgument, "{} holds more than {} JSON objects, arrays and strings", what,
                       kMaxJsonHeapValues);
  }
  // nlohmann's lexer reads a NUL byte as the end of the input (for C strings), so a body of
  // one value, a NUL and anything else parsed as the value alone. No JSON text holds a raw
  // NUL (inside a string it must be escaped), so any is malformed.
  if (const size_t nul = body.find('\0'); nul != std::string_view::npos) {
    return make_status(StatusCode::kInvalidArgument, "{} is not valid JSON: a NUL byte at offset {}", what, nul);
  }
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(body.begin(), body.end());
  } catch (const nlohmann::json::out_of_range& e) {
    if (e.id == 406) return number_out_of_range(body, what);
    return make_status(StatusCode::kInvalidArgument, "{} is not valid JSON: {}", what, e.what());
  } catch (const nlohmann::json::exception& e) {
    return make_status(StatusCode::kInvalidArgument, "{} is not valid JSON: {}", what, e.what());
  }
  if (!value.is_object()) {
    return make_status(StatusCode::kInvalidArgument, "{} must be a JSON object, got {}", what, json_type_name(value));
  }
  push_low_integers_out_of_range(body, &value);
  // Request bodies only: a JSON text nested in one as a string (a call's arguments, a schema)
  // has no integer fields.
  if (what == kRequestBody && holds_large_float(value)) {
    // A double rounds such a number, and an integer field took the rounded value without a
    // word ("seed": 9007199254740993.0 was the seed 9007199254740992; decision 0055).
    InexactNumberFinder finder;
    nlohmann::json::sax_parse(body.begin(), body.end(), &finder);
    if (finder.found()) {
      const std::string what_is_wrong = fmt::format(
          "the number {} is not held exactly (a double rounds it to {:.0f}); send an integer as digits without '.' "
          "or an exponent",
          finder.lexeme(), finder.rounded());
      return make_status(StatusCode::kInvalidArgument, "{}: {}", finder.where(), what_is_wrong);
    }
  }
  return value;
}

Status read_int(const nlohmann::json& obj, std::string_view path, const char* key, int64_t lo, int64_t hi,
                std::optional<int64_t>* out) {
  out->reset();
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  int64_t v = 0;
  if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) {
      return make_status(StatusCode::kInvalidArgument, "{} must be at most {}, got {}", field_name(path, key), hi, u);
    }
    v = static_cast<int64_t>(u);
  } else if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else if (it->is_number_float()) {
    const double d = it->get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) {
      return make_status(StatusCode::kInvalidArgument, "{} must be an integer, got {}", field_name(path, key),
                         it->dump());
    }
    // d is integral, so d <= hi is d < hi + 1; that bound stays right where (double)hi rounds
    // up (INT64_MAX becomes 2^63, which must not be converted).
    if (d < static_cast<double>(lo) || d >= static_cast<double>(hi) + 1.0) {
      return make_status(StatusCode::kInvalidArgument, "{} must be in [{}, {}], got {}", field_name(path, key), lo, hi,
                         it->dump());
    }
    v = static_cast<int64_t>(d);
  } else {
    return make_status(StatusCode::kInvalidArgument, "{} must be an integer, got {}", field_name(path, key),
                       json_type_name(*it));
  }
  if (v < lo || v > hi) {
    return make_status(StatusCode::kInvalidArgument, "{} must be in [{}, {}], got {}", field_name(path, key), lo, hi, v);
  }
  *out = v;
  return {};
}

Status read_number(const nlohmann::json& obj, std::string_view path, const char* key, double lo, double hi,
                   std::optional<double>* out) {
  out->reset();
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  if (!it->is_number()) {
    return make_status(StatusCode::kInvalidArgument, "{} must be a number, got {}", field_name(path, key),
                       json_type_name(*it));
  }
  const double d = it->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    return make_status(StatusCode::kInvalidArgument, "{} must be in [{}, {}], got {}", field_name(path, key), lo, hi,
                       it->dump());
  }
  *out = d;
  return {};
}

bool present(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}

Status read_bool(const nlohmann::json& obj, std::string_view path, const char* key, std::optional<bool>* out) {
  out->reset();
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  if (!it->is_boolean()) {
    return make_status(StatusCode::kInvalidArgument, "{} must be true or false, got {}", field_name(path, key),
                       json_type_name(*it));
  }
  *out = it->get<bool>();
  return {};
}

Status read_string(const nlohmann::json& obj, std::string_view path, const char* key,
                   std::optional<std::string>* out) {
  out->reset();
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  if (!it->is_string()) {
    return make_status(StatusCode::kInvalidArgument, "{} must be a string, got {}", field_name(path, key),
                       json_type_name(*it));
  }
  *out = it->get<std::string>();
  return {};
}

Result<int32_t> read_token_id(const nlohmann::json& v, std::string_view where, int64_t id_end) {
  if (!v.is_number_integer()) {
    return make_status(StatusCode::kInvalidArgument, "{} must be a token id (integer), got {}", where,
                       v.is_number() ? v.dump() : std::string(json_type_name(v)));
  }
  // number_unsigned holds ids up to 2^64 - 1, which get<int64_t> would wrap.
  const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() < static_cast<uint64_t>(std::max<int64_t>(id_end, 0))
                                               : v.get<int64_t>() >= 0 && v.get<int64_t>() < id_end;
  if (!in_range) {
    return make_status(StatusCode::kInvalidArgument, "{}: token id {} is outside the vocabulary [0, {})", where,
                       v.dump(), id_end);
  }
  return static_cast<int32_t>(v.get<int64_t>());
}

}  // namespace gs::server
