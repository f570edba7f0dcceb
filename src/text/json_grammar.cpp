// JSON Schema to value nodes, and the byte-level JSON matcher (decision 0027). The JSON
// syntax is RFC 8259's; the schema keywords are JSON Schema 2020-12's as OpenAI's
// structured outputs use them.
#include "text/json_grammar.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <map>
#include <tuple>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "text/chat_format.h"
#include "text/regex_dfa.h"
#include "text/schema_overlap.h"
#include "text/string_formats.h"
#include "text/utf8.h"

namespace gs::text {

namespace {

using json = nlohmann::json;
using Node = JsonGrammar::Node;

constexpr std::string_view kGemmaQuote = markup::kQuote;  // a tool call's string delimiter (one token)

// Whether a call's argument string can hold `text`: not the delimiter, which ends the
// string, nor markup that ends the call wherever it appears (the output parser's reading).
bool gemma_call_can_write(std::string_view text) {
  if (text.find(kGemmaQuote) != std::string_view::npos) return false;
  return std::none_of(markup::kCallTerminators.begin(), markup::kCallTerminators.end(),
                      [&](std::string_view m) { return text.find(m) != std::string_view::npos; });
}

Status invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

// The literal spellings a node's values may take besides numbers and strings.
void fill_literals(Node* n) {
  n->literals.clear();
  if (n->has_number_enum && (n->kinds & JsonGrammar::kNumber)) n->literals = n->number_enum;
  if (n->kinds & JsonGrammar::kTrue) n->literals.push_back("true");
  if (n->kinds & JsonGrammar::kFalse) n->literals.push_back("false");
  if (n->kinds & JsonGrammar::kNull) n->literals.push_back("null");
}

const Node& any_node() {
  static const Node n = [] {
    Node a;
    fill_literals(&a);
    return a;
  }();
  return n;
}

bool is_mark_letter(unsigned char c) { return (c >= 'a' && c <= 'z') || c == '_'; }

// A string's JSON text without its quotes, as nlohmann::json writes it, with each '<' that
// begins Gemma markup (`<|`, or `<` [a-z_]+ `|>`) written `\u003c`: the matcher refuses the
// raw form (JsonMatcher::feed_string), which the output parser would read as markup.
std::string escaped(const std::string& s) {
  const std::string d = json(s).dump();
  const std::string_view t = std::string_view(d).substr(1, d.size() - 2);
  std::string out;
  out.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    bool markup = false;
    if (t[i] == '<') {
      size_t j = i + 1;
      while (j < t.size() && is_mark_letter(static_cast<unsigned char>(t[j]))) ++j;
      markup = (j == i + 1 && j < t.size() && t[j] == '|') ||
               (j > i + 1 && j + 1 < t.size() && t[j] == '|' && t[j + 1] == '>');
    }
    if (markup) {
      out += "\\u003c";
    } else {
      out += t[i];
    }
  }
  return out;
}

std::string type_name(const json& v) { return v.type_name(); }

bool is_hex(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int hex_value(unsigned char c) {
  if (c <= '9') return c - '0';
  return (c | 0x20) - 'a' + 10;
}
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

// UTF-8 lead byte: the continuation bytes it needs and the range of the first of them
// (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF). False: not a lead.
bool utf8_lead(unsigned char c, uint8_t* need, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    *need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    *need = 2;
    if (c == 0xE0) *lo = 0xA0;
    if (c == 0xED) *hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    *need = 3;
    if (c == 0xF0) *lo = 0x90;
    if (c == 0xF4) *hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

// The next continuation byte of a character begun by utf8_lead: false when `c` is not in the
// range allowed there; otherwise one fewer is due, and the later ones take 0x80..0xBF.
bool utf8_continue(unsigned char c, uint8_t* need, uint8_t* lo, uint8_t* hi) {
  if (c < *lo || c > *hi) return false;
  --*need;
  *lo = 0x80;
  *hi = 0xBF;
  return true;
}

// The hash the matcher computes for a key it reads (JsonMatcher::Frame::key_hash) of a key
// spelled as the syntax writes it: FNV-1a over the code points of its JSON value, or over the
// bytes of a bare key.
uint64_t key_hash_of(const std::string& spelled, JsonSyntax syntax) {
  uint64_t h = 0xCBF29CE484222325ull;
  if (syntax == JsonSyntax::kGemmaCall) {
    for (char c : spelled) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
    return h;
  }
  std::u32string cps;
  decode_utf8(json::parse("\"" + spelled + "\"").get<std::string>(), &cps);
  for (char32_t c : cps) h = (h ^ static_cast<uint32_t>(c)) * 0x100000001B3ull;
  return h;
}

// The code point a one-character escape stands for (RFC 8259 section 7): \" \\ \/ \b \f \n \r \t.
uint32_t escaped_code_point(unsigned char c) {
  switch (c) {
    case 'b': return 0x08;
    case 'f': return 0x0C;
    case 'n': return 0x0A;
    case 'r': return 0x0D;
    case 't': return 0x09;
    default: return c;  // '"', '\\', '/'
  }
}

// A UTF-8 lead byte `c` of a character of need + 1 bytes: its code point bits so far, and the
// least code point of that many bytes (RFC 3629 section 3).
void utf8_begin(unsigned char c, uint8_t need, uint32_t* cp, uint32_t* cp_min) {
  *cp = c & (need == 1 ? 0x1Fu : need == 2 ? 0x0Fu : 0x07u);
  *cp_min = need == 1 ? 0x80 : need == 2 ? 0x800 : 0x10000;
}

// The code points that a character begun in a JSON string can still become, into out[0..3]
// (returns how many ranges): a UTF-8 form with `utf8_need` bytes due (bits `cp`, least
// `cp_min`); after '\' (`esc` 1: anything, a \u escape writes every code point); a \u escape
// with esc - 2 of its hex digits read (value `hex`), a high surrogate's digits leading to
// the astral plane; after a high surrogate (`low_next`, `cp` the high one): its 1024.
int partial_code_points(uint8_t utf8_need, uint32_t cp, uint32_t cp_min, uint8_t esc, uint16_t hex, bool low_next,
                        CodeRange out[4]) {
  int n = 0;
  const auto add = [&](uint32_t lo, uint32_t hi) {
    // Without the surrogates.
    if (lo > hi) return;
    if (hi < 0xD800 || lo > 0xDFFF) {
      out[n++] = {lo, hi};
      return;
    }
    if (lo < 0xD800) out[n++] = {lo, 0xD7FF};
    if (hi > 0xDFFF) out[n++] = {0xE000, hi};
  };
  if (utf8_need > 0) {
    const uint32_t shift = 6u * utf8_need;
    add(std::max(cp << shift, cp_min), std::min((cp << shift) | ((1u << shift) - 1), 0x10FFFFu));
    return n;
  }
  const int digits = esc >= 2 ? esc - 2 : 0;
  const uint32_t lo = static_cast<uint32_t>(hex) << (4 * (4 - digits));
  const uint32_t hi = lo | ((1u << (4 * (4 - digits))) - 1);
  if (low_next) {
    const uint32_t base = 0x10000 + ((cp - 0xD800) << 10);
    if (esc < 2) {
      out[n++] = {base, base + 0x3FF};
    } else {
      const uint32_t a = std::max(lo, 0xDC00u), b = std::min(hi, 0xDFFFu);
      if (a <= b) out[n++] = {base + (a - 0xDC00), base + (b - 0xDC00)};
    }
    return n;
  }
  if (esc == 1) {
    add(0, 0x10FFFF);
    return n;
  }
  add(lo, hi);
  const uint32_t a = std::max(lo, 0xD800u), b = std::min(hi, 0xDBFFu);
  if (a <= b) out[n++] = {0x10000 + ((a - 0xD800) << 10), 0x10000 + ((b - 0xD800) << 10) + 0x3FF};
  return n;
}

// The JSON pointer that the URI fragment of `ref` ("#...") spells: its text after '#'
// percent-decoded (RFC 3986; RFC 6901 section 6), so "#/$defs/a%20b" is "/$defs/a b" and
// "%2F" a separator. Nothing when a '%' is not followed by two hex digits.
std::optional<std::string> fragment_pointer(const std::string& ref) {
  std::string out;
  for (size_t i = 1; i < ref.size(); ++i) {
    if (ref[i] != '%') {
      out += ref[i];
      continue;
    }
    const auto hi = static_cast<unsigned char>(i + 1 < ref.size() ? ref[i + 1] : 0);
    const auto lo = static_cast<unsigned char>(i + 2 < ref.size() ? ref[i + 2] : 0);
    if (!is_hex(hi) || !is_hex(lo)) return std::nullopt;
    out += static_cast<char>(hex_value(hi) * 16 + hex_value(lo));
    i += 2;
  }
  return out;
}

// The schema that the "$ref" value `ref` at `path` names in `root`: "#" and "#/..." (JSON
// pointers into the same document, percent-encoded as URI fragments). Errors begin with `path`.
Result<const json*> resolve_ref(const json& root, const json& ref, const std::string& path) {
  if (!ref.is_string()) return invalid(path + " must be a string, got " + type_name(ref));
  const std::string& r = ref.get_ref<const std::string&>();
  if (r.empty() || r[0] != '#') return invalid(path + ": only references into this schema ('#...') are supported, got '" + r + "'");
  const std::optional<std::string> pointer = fragment_pointer(r);
  if (!pointer) return invalid(path + ": '" + r + "' is not a URI fragment (a '%' is not followed by two hex digits)");
  try {
    const json::json_pointer ptr(*pointer);
    if (root.contains(ptr)) return &root.at(ptr);
  } catch (const json::exception&) {
    return invalid(path + ": '" + r + "' is not a JSON pointer");
  }
  return invalid(path + ": '" + r + "' names nothing in the schema");
}

// The path of the schema that the resolved reference `ref` names, in the document whose root
// is at `root_path`: "#/$defs/a~1b" is "root_path.$defs.a/b", "#/$defs/a%20b"
// "root_path.$defs.a b" ([i] for an array's items).
std::string ref_target_path(const json& root, const std::string& root_path, const std::string& r) {
  const std::string ref = "#" + fragment_pointer(r).value_or(std::string());
  std::string path = root_path;
  const json* at = &root;
  for (size_t i = 2; i <= ref.size();) {  // past "#/"; a "#" alone is the root
    const size_t end = std::min(ref.find('/', i), ref.size());
    std::string token;
    for (size_t k = i; k < end; ++k) {
      if (ref[k] == '~' && k + 1 < end) {
        token += ref[k + 1] == '1' ? '/' : '~';
        ++k;
      } else {
        token += ref[k];
      }
    }
    if (at->is_array()) {
      path += "[" + token + "]";
      at = &(*at)[std::stoul(token)];
    } else {
      path += "." + token;
      at = &(*at)[token];
    }
    i = end + 1;
  }
  return path;
}

// check_schema_refs' walk over `s` (a schema at `path`) and the schemas its references name.
// `seen` holds the schemas walked (a reference back into one ends there).
Status check_refs(const json& root, const std::string& root_path, const json& s, const std::string& path, int depth,
                  std::set<const json*>* seen) {
  // Deeper than the compiler reads (it refuses such a schema itself); and no stack to spare.
  if (!s.is_object() || depth > kJsonMaxDepth || !seen->insert(&s).second) return {};
  if (const auto ref = s.find("$ref"); ref != s.end()) {
    GS_ASSIGN_OR_RETURN(const json* target, resolve_ref(root, *ref, path + ".$ref"));
    const std::string target_path = ref_target_path(root, root_path, ref->get<std::string>());
    GS_RETURN_IF_ERROR(check_refs(root, root_path, *target, target_path, depth + 1, seen));
  }
  // Keywords whose value is a schema, an array of schemas or an object of them; "$defs" and
  // "definitions" only through the references that reach into them (as the compiler).
  for (const char* k : {"items", "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains",
                        "propertyNames", "unevaluatedItems", "unevaluatedProperties"}) {
    const auto it = s.find(k);
    if (it == s.end()) continue;
    if (it->is_array()) {
      for (size_t i = 0; i < it->size(); ++i) {
        const std::string p = path + "." + k + "[" + std::to_string(i) + "]";
        GS_RETURN_IF_ERROR(check_refs(root, root_path, (*it)[i], p, depth + 1, seen));
      }
    } else {
      GS_RETURN_IF_ERROR(check_refs(root, root_path, *it, path + "." + k, depth + 1, seen));
    }
  }
  for (const char* k : {"anyOf", "oneOf", "allOf", "prefixItems"}) {
    const auto it = s.find(k);
    if (it == s.end() || !it->is_array()) continue;
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string p = path + "." + k + "[" + std::to_string(i) + "]";
      GS_RETURN_IF_ERROR(check_refs(root, root_path, (*it)[i], p, depth + 1, seen));
    }
  }
  for (const char* k : {"properties", "patternProperties", "dependentSchemas"}) {
    const auto it = s.find(k);
    if (it == s.end() || !it->is_object()) continue;
    for (const auto& item : it->items()) {
      const std::string p = path + "." + k + "." + item.key();
      GS_RETURN_IF_ERROR(check_refs(root, root_path, item.value(), p, depth + 1, seen));
    }
  }
  return {};
}

// Number states (RFC 8259 section 6).
enum NumberState : uint8_t { kNStart, kNMinus, kNZero, kNInt, kNDot, kNFrac, kNE, kNESign, kNExp };
bool number_can_end(uint8_t s) { return s == kNZero || s == kNInt || s == kNFrac || s == kNExp; }

// 10^k as a JsonInt, k in 0..38.
JsonInt pow10(int k) {
  static const auto table = [] {
    std::array<JsonInt, kJsonMaxExactDigits + 1> t{};
    t[0] = 1;
    for (size_t i = 1; i < t.size(); ++i) t[i] = t[i - 1] * 10;
    return t;
  }();
  return table[static_cast<size_t>(std::clamp(k, 0, kJsonMaxExactDigits))];
}

// The number of decimal digits of |v| (1 for 0).
int decimal_digits(JsonInt v) {
  if (v < 0) v = -v;
  int d = 1;
  while (d < kJsonMaxExactDigits && v >= pow10(d)) ++d;
  return d;
}

std::string int_text(JsonInt v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  auto m = static_cast<JsonUInt>(neg ? -v : v);
  std::string s;
  for (; m != 0; m /= 10) s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
  return neg ? "-" + s : s;
}

// A number as decimal digits: (-1)^negative * digits * 10^exp10 (digits without leading zeros).
struct Decimal {
  bool negative = false;
  std::string digits;
  int exp10 = 0;
};

Decimal decimal_of_text(std::string_view t) {
  Decimal d;
  size_t i = 0;
  if (i < t.size() && t[i] == '-') {
    d.negative = true;
    ++i;
  }
  bool point = false;
  for (; i < t.size() && t[i] != 'e' && t[i] != 'E'; ++i) {
    if (t[i] == '.') {
      point = true;
    } else {
      d.digits += t[i];
      if (point) --d.exp10;
    }
  }
  if (i < t.size()) d.exp10 += std::atoi(std::string(t.substr(i + 1)).c_str());
  const size_t nz = d.digits.find_first_not_of('0');
  d.digits = nz == std::string::npos ? "" : d.digits.substr(nz);
  return d;
}

// A bound or multipleOf as its decimal: integers exactly, other numbers as the shortest
// decimal that reads back as the same double (the number as written: 0.1, not
// 0.1000000000000000055...). `x` holds an int64, a uint64 or a double exactly.
Decimal decimal_of(long double x) {
  static_assert(std::numeric_limits<long double>::digits >= 64, "a long double must hold every uint64 exactly");
  if (!std::isfinite(x)) return Decimal{x < 0, "1", 1000};  // a number too large for a double: beyond every bound held
  if (std::floor(x) == x && std::fabs(x) < 18446744073709551616.0L) {
    const bool neg = x < 0;
    const auto m = static_cast<JsonUInt>(neg ? -x : x);
    return decimal_of_text((neg ? "-" : "") + int_text(static_cast<JsonInt>(m)));
  }
  char buf[64];
  // Scientific: in fixed notation a large double's digits would be its exact binary value.
  const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(x), std::chars_format::scientific);
  return decimal_of_text(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
}

// A bound keyword's value as a long double (exact for every JSON number nlohmann reads).
long double bound_value(const json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  return static_cast<long double>(v.get<double>());
}

// `d` in units of 10^-e, rounded up (`up`) or down to a whole unit, or one unit further when it
// is whole and `exclusive` (the least / greatest unit strictly beyond it). Nothing when the
// result is kJsonNoBound or more in magnitude.
std::optional<JsonInt> to_units(const Decimal& d, int e, bool up, bool exclusive) {
  const int shift = d.exp10 + e;
  JsonInt whole = 0;
  bool rest = false;  // digits below the unit dropped
  const auto n = static_cast<int>(d.digits.size());
  const int kept = shift >= 0 ? n : n + shift;  // digits at or above the unit
  if (kept + std::max(shift, 0) > kJsonMaxExactDigits) return std::nullopt;
  for (int i = 0; i < n; ++i) {
    if (i < kept) {
      whole = whole * 10 + (d.digits[static_cast<size_t>(i)] - '0');
    } else if (d.digits[static_cast<size_t>(i)] != '0') {
      rest = true;
    }
  }
  if (shift > 0) whole *= pow10(shift);
  JsonInt v = d.negative ? -whole : whole;
  // v is d truncated toward zero; step to the side asked for.
  if (rest) {
    if (up && !d.negative) ++v;
    if (!up && d.negative) --v;
  } else if (exclusive) {
    v += up ? 1 : -1;
  }
  if (v >= kJsonNoBound || v <= -kJsonNoBound) return std::nullopt;
  return v;
}

// The fraction digits of `d` (0 for an integer).
int fraction_digits(const Decimal& d) { return d.digits.empty() ? 0 : std::max(0, -d.exp10); }

// Whether [x, y] (x >= 0) holds a multiple of step (>= 1).
bool holds_multiple(JsonInt x, JsonInt y, JsonInt step) {
  if (x > y) return false;
  const JsonInt r = x % step;
  return y - x >= (r == 0 ? 0 : step - r);
}

// The magnitudes that a number of n's exact form may have with the sign given: [*lo, *hi] in
// units; false when that sign has none ("-0" is no integer).
bool magnitude_range(const Node& n, bool negative, JsonInt* lo, JsonInt* hi) {
  if (!negative) {
    *lo = std::max<JsonInt>(n.units_lo, 0);
    *hi = n.units_hi;
  } else {
    *lo = std::max<JsonInt>(-n.units_hi, n.integer ? 1 : 0);
    *hi = -n.units_lo;
  }
  return *lo <= *hi;
}

// Whether some number of n's exact form (Node::num_exact) begins with the digits read: `v`
// their value (the integer part's `int_len` digits, then `frac_len` fraction digits when
// `fraction`; frac_len 0 right after the point), in magnitude, with the sign given. The
// numbers it may become are, for each count k of integer digits still to come, v * 10^k ..
// (v + 1) * 10^k - 1 in whole units of 10^-frac_digits (any fraction after them); after
// the point, v .. v + 1 scaled by the fraction digits still to come.
bool exact_reachable(const Node& n, bool negative, JsonInt v, int int_len, bool fraction, int frac_len) {
  JsonInt lo = 0, hi = 0;
  if (!magnitude_range(n, negative, &lo, &hi)) return false;
  const auto fits = [&](JsonInt a, JsonInt b) { return holds_multiple(std::max(a, lo), std::min(b, hi), n.units_step); };
  if (fraction) {
    const JsonInt unit = pow10(n.frac_digits - frac_len);
    return fits(v * unit, (v + 1) * unit - 1);
  }
  if (v == 0) return fits(0, pow10(n.frac_digits) - 1);  // a leading 0: no more integer digits
  for (int k = 0; int_len + k <= n.int_digits; ++k) {
    const JsonInt unit = pow10(k + n.frac_digits);
    if (v * unit > hi) break;
    if (fits(v * unit, (v + 1) * unit - 1)) return true;
  }
  return false;
}

// Whether the exact form's number whose digits have value `v` (frac_len fraction digits) is
// whole and allowed: within the bounds and a multiple of the step.
bool exact_allowed(const Node& n, bool negative, JsonInt v, int frac_len) {
  JsonInt lo = 0, hi = 0;
  if (!magnitude_range(n, negative, &lo, &hi)) return false;
  const JsonInt units = v * pow10(n.frac_digits - frac_len);
  return units >= lo && units <= hi && units % n.units_step == 0;
}

// Whether n's exact form has a number that begins with byte c ('-' or a digit).
bool exact_may_begin(const Node& n, unsigned char c) {
  if (c != '-') return exact_reachable(n, false, c - '0', 1, false, 0);
  for (int d = n.integer ? 1 : 0; d <= 9; ++d) {
    if (exact_reachable(n, true, d, 1, false, 0)) return true;
  }
  return false;
}

// How n's numbers are written and checked (Node::num_exact and the fields after it), from its
// bounds and multipleOf. False, with *why, when no number of that form is allowed.
bool fill_number_form(Node* n, std::string* why) {
  n->num_exact = false;
  n->frac_digits = 0;
  n->int_digits = kJsonMaxIntegerDigits;
  n->units_step = 1;
  n->units_lo = -kJsonMaxInteger;
  n->units_hi = kJsonMaxInteger;
  const bool bounded = n->num_min > -std::numeric_limits<long double>::infinity() ||
                       n->num_max < std::numeric_limits<long double>::infinity();
  if (!n->integer && !bounded && n->multiple_of == 0) return true;  // a free number
  n->num_exact = true;
  std::optional<Decimal> step;
  if (n->multiple_of > 0) step = decimal_of(n->multiple_of);
  if (n->integer) {
    // Integers: units of 1. An integer is a multiple of c * 10^-f when it is one of
    // c / gcd(c, 10^f).
    const JsonInt lo = n->int_min, hi = n->int_max;
    int digits = kJsonMaxIntegerDigits;
    if (lo > -kJsonNoBound) digits = std::max(digits, decimal_digits(lo));
    if (hi < kJsonNoBound) digits = std::max(digits, decimal_digits(hi));
    n->int_digits = static_cast<int8_t>(digits);
    n->units_lo = lo > -kJsonNoBound ? lo : -(pow10(digits) - 1);
    n->units_hi = hi < kJsonNoBound ? hi : pow10(digits) - 1;
    if (step) {
      const int f = fraction_digits(*step);
      const std::optional<JsonInt> c = to_units(*step, f, false, false);
      if (!c || f > kJsonMaxExactDigits) {
        *why = "multipleOf is too large or has too many digits to be held";
        return false;
      }
      JsonInt a = *c, b = pow10(f);
      while (b != 0) {
        const JsonInt t = a % b;
        a = b;
        b = t;
      }
      n->units_step = *c / a;
    }
  } else {
    // Numbers: the integer digits the bounds need (18 at least), the fraction digits of the
    // multipleOf or else what is left of 38 (20 at most).
    int digits = kJsonMaxIntegerDigits;
    std::optional<Decimal> lo, hi;
    if (n->num_min > -std::numeric_limits<long double>::infinity()) lo = decimal_of(n->num_min);
    if (n->num_max < std::numeric_limits<long double>::infinity()) hi = decimal_of(n->num_max);
    for (const auto& d : {lo, hi}) {
      if (d && !d->digits.empty()) digits = std::max(digits, static_cast<int>(d->digits.size()) + d->exp10);
    }
    if (digits > kJsonMaxExactDigits) digits = kJsonMaxExactDigits;
    int frac = std::min(kJsonMaxDigits, kJsonMaxExactDigits - digits);
    if (step) {
      frac = fraction_digits(*step);
      if (digits + frac > kJsonMaxExactDigits) {
        *why = "multipleOf has more fraction digits than can be held beside these bounds (" +
               std::to_string(kJsonMaxExactDigits) + " digits in all)";
        return false;
      }
      const std::optional<JsonInt> c = to_units(*step, frac, false, false);
      if (!c) {
        *why = "multipleOf is too large to be held";
        return false;
      }
      n->units_step = *c;
    }
    n->int_digits = static_cast<int8_t>(digits);
    n->frac_digits = static_cast<int8_t>(frac);
    const JsonInt cap = pow10(digits + frac) - 1;
    n->units_lo = -cap;
    n->units_hi = cap;
    if (lo) {
      if (const auto u = to_units(*lo, frac, true, n->num_min_exclusive)) n->units_lo = std::max(n->units_lo, *u);
    }
    if (hi) {
      if (const auto u = to_units(*hi, frac, false, n->num_max_exclusive)) n->units_hi = std::min(n->units_hi, *u);
    }
  }
  // Some number of the form: a multiple of the step within the bounds (by sign).
  JsonInt a = 0, b = 0;
  if ((magnitude_range(*n, false, &a, &b) && holds_multiple(a, b, n->units_step)) ||
      (magnitude_range(*n, true, &a, &b) && holds_multiple(a, b, n->units_step))) {
    return true;
  }
  if (n->integer) {
    *why = n->units_step > 1 ? "no multiple of " + int_text(n->units_step) + " lies within its minimum and maximum"
                             : "no integer lies within its minimum and maximum";
  } else {
    *why = "no number of at most " + std::to_string(n->frac_digits) +
           " fraction digits" + (step ? " that is a multiple of multipleOf" : "") + " lies within its minimum and maximum";
  }
  return false;
}

// Whether the JSON number `v` is an integer within n's int_min .. int_max.
bool integer_within(const json& v, const Node& n) {
  if (!v.is_number()) return false;
  const long double x = bound_value(v);
  if (std::floor(x) != x) return false;
  const std::optional<JsonInt> i = to_units(decimal_of(x), 0, false, false);
  return i && *i >= n.int_min && *i <= n.int_max;
}

// Narrows n's bounds as written to `bound` where it is the tighter (`exclusive`: the bound
// itself is out): the lower one, and the upper one.
void narrow_lower(Node* n, long double bound, bool exclusive) {
  if (bound > n->num_min || (bound == n->num_min && exclusive)) {
    n->num_min = bound;
    n->num_min_exclusive = exclusive;
  }
}
void narrow_upper(Node* n, long double bound, bool exclusive) {
  if (bound < n->num_max || (bound == n->num_max && exclusive)) {
    n->num_max = bound;
    n->num_max_exclusive = exclusive;
  }
}

// Whether the JSON number `v` is a multiple of n's multipleOf (none: true).
bool multiple_within(const json& v, const Node& n) {
  if (n.multiple_of == 0) return true;
  const Decimal x = decimal_of(bound_value(v));
  const Decimal m = decimal_of(n.multiple_of);
  const int f = std::max(fraction_digits(x), fraction_digits(m));
  const std::optional<JsonInt> xu = to_units(x, f, false, false);
  const std::optional<JsonInt> mu = to_units(m, f, false, false);
  if (!xu || !mu || *mu == 0) return false;  // beyond what is held: not written
  return *xu % *mu == 0;
}

// Whether the JSON number `v` lies within n's bounds (exactly: every JSON number and bound
// is compared as the long double that holds it) and is a multiple of its multipleOf.
bool number_within(const json& v, const Node& n) {
  const long double d = bound_value(v);
  return (d > n.num_min || (d == n.num_min && !n.num_min_exclusive)) &&
         (d < n.num_max || (d == n.num_max && !n.num_max_exclusive)) && multiple_within(v, n);
}

bool is_integral(const json& v) {
  return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
}

// A bound keyword's value as an integer bound: rounded up (`up`) or down, one further when
// `exclusive` and whole; -/+kJsonNoBound when it is that large or more in magnitude.
JsonInt integer_bound(const json& v, bool up, bool exclusive) {
  const Decimal d = decimal_of(bound_value(v));
  if (const auto u = to_units(d, 0, up, exclusive)) return *u;
  return d.negative ? -kJsonNoBound : kJsonNoBound;
}

// `s` without the keywords that constrain no value (annotations, definitions).
json without_annotations(const json& s) {
  json rest = s;
  for (const char* k : {"$defs", "definitions", "title", "description", "$comment", "default", "examples", "$schema",
                        "$id", "$anchor", "deprecated", "readOnly", "writeOnly"}) {
    rest.erase(k);
  }
  return rest;
}

// Whether n allows every JSON value (as any_node).
bool allows_everything(const Node& n) {
  const Node any;
  return n.kinds == JsonGrammar::kAnyKind && n.keys.empty() && n.extra_keys && !n.closed &&
         n.extra_node == JsonGrammar::kAny && n.items == JsonGrammar::kAny && n.min_items == 0 && n.max_items < 0 &&
         !n.has_string_enum && n.min_length == 0 && n.max_length < 0 && !n.integer && !n.has_number_enum &&
         n.int_min == any.int_min && n.int_max == any.int_max && n.num_min == any.num_min && n.num_max == any.num_max &&
         n.multiple_of == 0 && !n.pattern && n.min_properties == 0 && n.max_properties < 0 &&
         n.deferred.empty();
}

// Object and array phases.
enum Phase : uint8_t {
  kObjOpen,   // after '{': whitespace, a key or '}'
  kObjKey,    // a key string is on top
  kObjColon,  // after a key: whitespace or ':'
  kObjValue,  // a value is on top
  kObjNext,   // after a value: whitespace, ',' or '}'
  kObjComma,  // after ',': whitespace or a key
  kArrOpen,   // after '[': whitespace, a value or ']'
  kArrValue,  // a value is on top
  kArrNext,   // after a value: whitespace, ',' or ']'
  kArrComma,  // after ',': whitespace or a value
};

std::bitset<kJsonMaxKeys> first_n(size_t n) {
  std::bitset<kJsonMaxKeys> b;
  for (size_t i = 0; i < n; ++i) b.set(i);
  return b;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Schema compiler

class JsonSchemaCompiler {
 public:
  JsonSchemaCompiler(const json& root, JsonSyntax syntax, RegexBudget* budget)
      : root_(root), syntax_(syntax), budget_(budget ? budget : &own_budget_) {}

  // Set where a refusal says that a keyword leaves its schema no value (an empty enum, lengths,
  // counts or bounds that nothing meets): the schema is broken, not beyond the matcher.
  bool admits_no_value = false;
  // Enum values the call form cannot write, left out: an enum emptied by them is the call
  // form's limit, not the schema's.
  int call_form_skips = 0;

  // invalid(message), noting (where `none` holds) that the schema admits no value.
  Status no_value(std::string message, bool none = true) {
    if (none) admits_no_value = true;
    return invalid(std::move(message));
  }

  // The node index of schema `s` (kAny for a schema that constrains nothing).
  Result<int32_t> compile(const json& s, const std::string& path, int depth) {
    if (depth > kJsonMaxDepth) return invalid(path + ": the schema nests deeper than " + std::to_string(kJsonMaxDepth));
    if (s.is_boolean()) {
      if (s.get<bool>()) return JsonGrammar::kAny;
      return invalid(path + ": the schema false allows no value");
    }
    if (!s.is_object()) return invalid(path + ": a schema must be an object or a boolean, got " + type_name(s));
    // Keywords that change which values are valid but that the matcher cannot hold: refused,
    // not ignored (the output could break them).
    for (const char* k : {"not", "if", "then", "else", "contains", "minContains", "maxContains", "propertyNames",
                          "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties",
                          "unevaluatedItems", "patternProperties", "prefixItems", "$dynamicRef", "$recursiveRef"}) {
      // Said of any schema it compiles (response_format's, a forced tool's parameters).
      if (s.contains(k)) {
        return invalid(path + "." + k + ": this keyword is not supported: it cannot be enforced while decoding");
      }
    }
    if (s.contains("$ref")) {
      // Other constraining keywords beside $ref apply too (2020-12): the two as allOf.
      json rest = without_annotations(s);
      rest.erase("$ref");
      if (rest.empty()) return compile_ref(s["$ref"], path + ".$ref", depth);
      GS_ASSIGN_OR_RETURN(int32_t r, compile_ref(s["$ref"], path + ".$ref", depth));
      // Kinds only from "type": a keyword beside the reference limits the values of its kind
      // (maxLength, strings), not which kinds the reference allows.
      GS_ASSIGN_OR_RETURN(Node more, build(rest, path, depth, /*infer_kinds=*/false));
      if (allows_everything(more)) return r;  // keywords that bind nothing (format, discriminator, ...)
      if (in_progress(r)) return invalid(path + ".$ref: a reference back into itself beside other keywords is not supported");
      Node n = r == JsonGrammar::kAny ? any_node() : nodes[static_cast<size_t>(r)];
      GS_RETURN_IF_ERROR(merge_all(&n, more, path, depth));
      fill_literals(&n);
      nodes.push_back(std::move(n));
      return static_cast<int32_t>(nodes.size() - 1);
    }
    GS_ASSIGN_OR_RETURN(Node n, build(s, path, depth));
    nodes.push_back(std::move(n));
    return static_cast<int32_t>(nodes.size() - 1);
  }

  std::vector<Node> nodes;

  // Merges each union's deferred alternatives into it (by value, as build merges the
  // others), round after round until every deferred content has reached every union that
  // depends on it (a chain of k deferred nodes needs k rounds), then clears the lists.
  // Errors (a union merge_union cannot express) begin with `path`, the schema's.
  Status resolve_deferred(const std::string& path) {
    std::vector<std::pair<size_t, Node>> own;  // each union with deferred parts, as compiled
    for (size_t i = 0; i < nodes.size(); ++i)
      if (!nodes[i].deferred.empty()) own.emplace_back(i, nodes[i]);
    for (size_t round = 0; round <= own.size(); ++round) {
      for (const auto& [i, base] : own) {
        Node m = base;
        for (int32_t a : base.deferred) {
          Node alt = nodes[static_cast<size_t>(a)];
          alt.deferred.clear();
          GS_ASSIGN_OR_RETURN(m, merge_union(m, alt, path));
        }
        m.deferred = base.deferred;
        fill_literals(&m);
        nodes[i] = std::move(m);
      }
    }
    for (Node& n : nodes) n.deferred.clear();
    return {};
  }

 private:
  Result<int32_t> compile_ref(const json& ref, const std::string& path, int depth) {
    GS_ASSIGN_OR_RETURN(const json* target, resolve_ref(root_, ref, path));
    // One node per schema named, however the reference spells it ("a%20b", "a b").
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    const std::string r = ref.get<std::string>();
    // Reserve the index first: a schema may refer to itself (trees, linked lists).
    const auto index = static_cast<int32_t>(nodes.size());
    nodes.emplace_back();
    refs_[target] = index;
    building_.insert(index);
    Node n;
    if (target->is_object() && target->contains("$ref")) {
      // Compiled as any schema with a reference: the keywords beside it apply as well (a
      // reference back into itself beside them is refused there).
      GS_ASSIGN_OR_RETURN(int32_t other, compile(*target, path, depth + 1));
      if (in_progress(other)) return invalid(path + ": '" + r + "' leads back to itself through references alone");
      n = other == JsonGrammar::kAny ? any_node() : nodes[static_cast<size_t>(other)];
    } else if (target->is_boolean() || !target->is_object()) {
      GS_ASSIGN_OR_RETURN(int32_t i, compile(*target, path, depth + 1));
      n = i == JsonGrammar::kAny ? any_node() : nodes[static_cast<size_t>(i)];
    } else {
      GS_ASSIGN_OR_RETURN(n, build(*target, path, depth + 1));
    }
    nodes[static_cast<size_t>(index)] = std::move(n);
    building_.erase(index);
    return index;
  }

  // A reference whose node is still being compiled (its content is not known yet).
  bool in_progress(int32_t i) const { return building_.count(i) != 0; }

  // The node of `s` as a value (alternatives of anyOf are merged by value). A reference
  // still being compiled (recursion through the union) allows nothing yet and is listed in
  // `deferred`, merged in by resolve_deferred once every node is compiled; elsewhere
  // (allOf) it is refused.
  Result<Node> node_of(const json& s, const std::string& path, int depth, bool in_union) {
    GS_ASSIGN_OR_RETURN(int32_t i, compile(s, path, depth));
    if (in_progress(i)) {
      if (!in_union) return invalid(path + ": a reference back into itself is not supported here");
      Node pending;
      pending.kinds = 0;
      pending.deferred = {i};
      return pending;
    }
    return i == JsonGrammar::kAny ? any_node() : nodes[static_cast<size_t>(i)];
  }

  // infer_kinds: without "type", the kinds the keywords imply ("properties": objects,
  // "minLength": strings) rather than any (for a schema of its own; not for keywords that
  // stand beside others, which limit only the values of their kind).
  Result<Node> build(const json& s, const std::string& path, int depth, bool infer_kinds = true) {
    if (!s.contains("anyOf") && !s.contains("oneOf") && !s.contains("allOf")) {
      return build_plain(s, path, depth, infer_kinds);
    }
    // The keywords beside anyOf / oneOf / allOf hold for every value, as one more allOf
    // member; they limit the values of their kind only (kinds from "type" alone).
    json rest = without_annotations(s);
    for (const char* k : {"anyOf", "oneOf", "allOf"}) rest.erase(k);
    Node base = any_node();
    bool base_free = true;  // base allows every value (no keyword beside the combinators binds)
    if (!rest.empty()) {
      GS_ASSIGN_OR_RETURN(base, build_plain(rest, path, depth, /*infer_kinds=*/false));
      base_free = allows_everything(base);
    }
    if (s.contains("allOf")) {
      const json& all = s["allOf"];
      const std::string p = path + ".allOf";
      if (!all.is_array() || all.empty()) return invalid(p + " must be a non-empty array");
      for (size_t i = 0; i < all.size(); ++i) {
        GS_ASSIGN_OR_RETURN(Node more, node_of(all[i], p + "[" + std::to_string(i) + "]", depth + 1, false));
        if (base_free) {
          base = std::move(more);
          base_free = false;
        } else {
          GS_RETURN_IF_ERROR(merge_all(&base, more, p, depth));
        }
      }
      fill_literals(&base);
    }
    // anyOf, then oneOf (read as anyOf): each alternative with what holds so far; with both,
    // each pair. An alternative that leaves no value drops out.
    std::vector<Node> branches = {base};
    bool branches_free = base_free;
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      const json& alts = s[key];
      const std::string p = path + "." + key;
      if (!alts.is_array() || alts.empty()) return invalid(p + " must be a non-empty array");
      if (alts.size() > static_cast<size_t>(kJsonMaxKeys)) {
        return invalid(p + ": " + std::to_string(alts.size()) + " alternatives; at most " +
                       std::to_string(kJsonMaxKeys) + " are supported");
      }
      if (std::string_view(key) == "oneOf") GS_RETURN_IF_ERROR(check_one_of(s, p));
      std::vector<Node> next;
      for (const Node& b : branches) {
        for (size_t i = 0; i < alts.size(); ++i) {
          const std::string pi = p + "[" + std::to_string(i) + "]";
          GS_ASSIGN_OR_RETURN(Node alt, node_of(alts[i], pi, depth + 1, true));
          if (!branches_free) {
            Node n = b;
            std::string why;
            GS_RETURN_IF_ERROR(intersect(&n, alt, pi, depth, &why));
            if (n.kinds == 0) continue;
            fill_literals(&n);
            alt = std::move(n);
          }
          if (next.size() >= static_cast<size_t>(kJsonMaxKeys)) {
            return invalid(p + ": more than " + std::to_string(kJsonMaxKeys) + " alternatives with those beside them");
          }
          next.push_back(std::move(alt));
        }
      }
      if (next.empty()) return invalid(p + ": no alternative allows a value that the keywords beside it allow");
      branches = std::move(next);
      branches_free = false;
    }
    Node merged = branches[0];
    std::vector<int32_t> deferred = merged.deferred;
    for (size_t i = 1; i < branches.size(); ++i) {
      deferred.insert(deferred.end(), branches[i].deferred.begin(), branches[i].deferred.end());
      GS_ASSIGN_OR_RETURN(merged, merge_union(merged, branches[i], path + (s.contains("anyOf") ? ".anyOf" : ".oneOf")));
    }
    if (!base_free && branches.size() > 1 && syntax_ == JsonSyntax::kGemmaCall) {
      // The union merges alternatives of one kind loosely there; what holds for all holds for
      // it. (In the JSON syntax the merge is exact, of alternatives each read with base.)
      std::string why;
      GS_RETURN_IF_ERROR(intersect(&merged, base, path, depth, &why));
    }
    merged.deferred = std::move(deferred);
    fill_literals(&merged);
    return merged;
  }

  // oneOf is held as anyOf (at least one alternative matches), which is oneOf only where no
  // value matches two: refused unless schema_overlap.h proves its alternatives apart (each
  // read with the keywords beside it). In a tool call (kGemmaCall) it stays read as anyOf, as
  // before: refusing it there would drop the whole grammar to the first-key fallback (point 7),
  // and real tool schemas use oneOf loosely (decision 0027 point 11).
  Status check_one_of(const json& s, const std::string& p) {
    if (syntax_ != JsonSyntax::kJson) return {};
    json beside = s;
    beside.erase("oneOf");
    const auto overlap = first_overlapping_alternatives(s["oneOf"], beside, [this](const json& ref) -> const json* {
      auto target = resolve_ref(root_, ref, "");
      return target.ok() ? *target : nullptr;
    });
    if (!overlap) return {};
    if (overlap->out_of_budget) {
      return invalid(p + ": its alternatives could not be proven exclusive within the work limit (" +
                     std::to_string(kOneOfProofBudget) + " schema reads and comparisons per oneOf; the proof stopped "
                     "at alternatives " + std::to_string(overlap->first) + " and " + std::to_string(overlap->second) +
                     "): oneOf is supported only where no value can match two alternatives; use anyOf, or fewer or "
                     "simpler alternatives");
    }
    return invalid(p + ": alternatives " + std::to_string(overlap->first) + " and " + std::to_string(overlap->second) +
                   " are not provably exclusive: oneOf is supported only where no value can match two alternatives "
                   "(different types, distinct const or enum values, number ranges or lengths that do not meet, or "
                   "a required property whose schemas do not meet), since the output is held to one of them, not "
                   "to exactly one; anyOf allows a value that matches several");
  }

  // A schema without anyOf, oneOf or allOf.
  Result<Node> build_plain(const json& s, const std::string& path, int depth, bool infer_kinds) {
    if (s.contains("enum") || s.contains("const")) {
      GS_ASSIGN_OR_RETURN(Node lit, literal_node(s, path));
      // The values the keywords beside it allow: its type, and without one each keyword
      // limits the values of its kind (string lengths, number bounds). Keywords of objects
      // and arrays concern no value an enum may list.
      Node shape;
      GS_RETURN_IF_ERROR(read_types(s, path, &shape, /*infer_kinds=*/false));
      GS_RETURN_IF_ERROR(read_count(s, path, "minLength", &shape.min_length));
      GS_RETURN_IF_ERROR(read_count(s, path, "maxLength", &shape.max_length));
      GS_RETURN_IF_ERROR(read_integer_bounds(s, path, &shape));
      GS_RETURN_IF_ERROR(read_pattern(s, path, &shape));
      lit.pattern = shape.pattern;
      lit.kinds &= shape.kinds;
      lit.integer = shape.integer;
      lit.min_length = shape.min_length;
      lit.max_length = shape.max_length;
      lit.int_min = shape.int_min;
      lit.int_max = shape.int_max;
      lit.num_min = shape.num_min;
      lit.num_max = shape.num_max;
      lit.num_min_exclusive = shape.num_min_exclusive;
      lit.num_max_exclusive = shape.num_max_exclusive;
      lit.multiple_of = shape.multiple_of;
      restrict_literals(&lit);
      if (lit.kinds == 0) {
        return no_value(path + ": no enum or const value satisfies the keywords beside it (type, length, bounds, pattern)",
                        call_form_skips == 0);
      }
      fill_literals(&lit);
      return lit;
    }

    Node n;
    GS_RETURN_IF_ERROR(read_types(s, path, &n, infer_kinds));
    GS_RETURN_IF_ERROR(read_integer_bounds(s, path, &n));
    if (std::string why; (n.kinds & JsonGrammar::kNumber) && !fill_number_form(&n, &why)) {
      // Bounds (and multipleOf) that no number meets: an integer schema is refused, other
      // kinds beside a number are kept.
      n.kinds &= static_cast<uint8_t>(~JsonGrammar::kNumber);
      // fill_number_form's "no ... lies within" is the schema's; its other reasons are limits.
      if (n.integer || n.kinds == 0) return no_value(path + ": " + why, why.rfind("no ", 0) == 0);
    }
    if (n.kinds & JsonGrammar::kObject) GS_RETURN_IF_ERROR(read_object(s, path, depth, &n));
    if (n.kinds & JsonGrammar::kArray) GS_RETURN_IF_ERROR(read_array(s, path, depth, &n));
    if (n.kinds & JsonGrammar::kString) {
      GS_RETURN_IF_ERROR(read_count(s, path, "minLength", &n.min_length));
      GS_RETURN_IF_ERROR(read_count(s, path, "maxLength", &n.max_length));
      if (n.max_length >= 0 && n.min_length > n.max_length) return no_value(path + ": minLength is above maxLength");
      GS_RETURN_IF_ERROR(read_pattern(s, path, &n));
      std::string why;
      const std::string keyword = path + (s.contains("pattern") ? ".pattern" : ".format");
      GS_ASSIGN_OR_RETURN(const bool fits, fill_string_form(&n, keyword, &why));
      if (!fits) return invalid(keyword + ": " + why);
    }
    fill_literals(&n);
    return n;
  }

  Status read_types(const json& s, const std::string& path, Node* n, bool infer_kinds = true) {
    auto it = s.find("type");
    if (it == s.end() && !infer_kinds) {
      n->kinds = JsonGrammar::kAnyKind;
      return {};
    }
    if (it == s.end()) {
      // No type: what the keywords present imply, or any value.
      uint8_t kinds = 0;
      for (const char* k : {"properties", "required", "additionalProperties", "minProperties", "maxProperties"}) {
        if (s.contains(k)) kinds |= JsonGrammar::kObject;
      }
      for (const char* k : {"items", "minItems", "maxItems"}) {
        if (s.contains(k)) kinds |= JsonGrammar::kArray;
      }
      for (const char* k : {"minLength", "maxLength", "pattern"}) {
        if (s.contains(k)) kinds |= JsonGrammar::kString;
      }
      // A format this server enforces is one of strings; others bind nothing.
      if (const auto f = s.find("format"); f != s.end() && f->is_string() && !format_pattern(f->get<std::string>()).empty()) {
        kinds |= JsonGrammar::kString;
      }
      n->kinds = kinds != 0 ? kinds : static_cast<uint8_t>(JsonGrammar::kAnyKind);
      return {};
    }
    std::vector<json> types;
    if (it->is_string()) {
      types.push_back(*it);
    } else if (it->is_array() && !it->empty()) {
      types = it->get<std::vector<json>>();
    } else {
      return invalid(path + ".type must be a type name or a non-empty array of them");
    }
    n->kinds = 0;
    bool number = false;
    bool integer = false;
    for (const json& t : types) {
      const std::string name = t.is_string() ? t.get<std::string>() : std::string();
      if (name == "object") {
        n->kinds |= JsonGrammar::kObject;
      } else if (name == "array") {
        n->kinds |= JsonGrammar::kArray;
      } else if (name == "string") {
        n->kinds |= JsonGrammar::kString;
      } else if (name == "number") {
        number = true;
      } else if (name == "integer") {
        integer = true;
      } else if (name == "boolean") {
        n->kinds |= JsonGrammar::kTrue | JsonGrammar::kFalse;
      } else if (name == "null") {
        n->kinds |= JsonGrammar::kNull;
      } else {
        return invalid(path + ".type: unknown type " + t.dump());
      }
    }
    if (number || integer) n->kinds |= JsonGrammar::kNumber;
    n->integer = integer && !number;
    return {};
  }

  Status read_object(const json& s, const std::string& path, int depth, Node* n) {
    n->keys.clear();
    n->key_nodes.clear();
    if (auto it = s.find("properties"); it != s.end()) {
      if (!it->is_object()) return invalid(path + ".properties must be an object, got " + type_name(*it));
      if (it->size() > static_cast<size_t>(kJsonMaxKeys)) {
        return invalid(path + ".properties: more than " + std::to_string(kJsonMaxKeys) + " properties");
      }
      for (const auto& item : it->items()) {
        GS_ASSIGN_OR_RETURN(int32_t child, compile(item.value(), path + ".properties." + item.key(), depth + 1));
        GS_ASSIGN_OR_RETURN(std::string key, key_spelling(item.key(), path + ".properties"));
        n->keys.push_back(std::move(key));
        n->key_nodes.push_back(child);
      }
    }
    // Without properties an object is free; with them, only they are written unless
    // additionalProperties (or patternProperties) says otherwise (decision 0027).
    n->extra_keys = n->keys.empty();
    n->extra_node = JsonGrammar::kAny;
    if (auto it = s.find("additionalProperties"); it != s.end()) {
      if (it->is_boolean()) {
        n->extra_keys = it->get<bool>();
        n->closed = !n->extra_keys;
      } else {
        GS_ASSIGN_OR_RETURN(n->extra_node, compile(*it, path + ".additionalProperties", depth + 1));
        n->extra_keys = true;
      }
    }
    if (s.contains("patternProperties")) n->extra_keys = true;
    if (auto it = s.find("required"); it != s.end()) {
      if (!it->is_array()) return invalid(path + ".required must be an array of property names");
      for (const json& r : *it) {
        if (!r.is_string()) return invalid(path + ".required must be an array of property names");
        GS_ASSIGN_OR_RETURN(const std::string key, key_spelling(r.get<std::string>(), path + ".required"));
        size_t i = 0;
        while (i < n->keys.size() && n->keys[i] != key) ++i;
        if (i == n->keys.size()) {
          // A required key the properties do not declare: its value is an extra one. Only an
          // explicit additionalProperties: false refuses it; absent, JSON Schema allows any
          // value under it, and the key is written as one more declared key (decision 0046;
          // it was refused as if additionalProperties were false).
          if (n->closed) {
            return invalid(path + ".required: '" + r.get<std::string>() +
                           "' is not a declared property and additionalProperties is false");
          }
          if (n->keys.size() >= static_cast<size_t>(kJsonMaxKeys)) {
            return invalid(path + ".required: more than " + std::to_string(kJsonMaxKeys) + " properties");
          }
          n->keys.push_back(key);
          n->key_nodes.push_back(n->extra_node);
        }
        n->required.set(i);
      }
    }
    GS_RETURN_IF_ERROR(read_count(s, path, "minProperties", &n->min_properties));
    GS_RETURN_IF_ERROR(read_count(s, path, "maxProperties", &n->max_properties));
    if (const std::string why = object_count_problem(*n); !why.empty()) {
      return no_value(path + (s.contains("minProperties") && why.rfind("minProperties", 0) == 0 ? ".minProperties: "
                                                                                               : ".maxProperties: ") +
                      why);
    }
    return {};
  }

  // Why no object of n can be written for its minProperties / maxProperties (beginning with
  // the keyword at fault), or empty when some can.
  std::string object_count_problem(const Node& n) const {
    const auto required = static_cast<int64_t>(n.required.count());
    if (n.max_properties >= 0 && n.min_properties > n.max_properties) {
      return "minProperties " + std::to_string(n.min_properties) + " is above maxProperties " +
             std::to_string(n.max_properties);
    }
    if (n.max_properties >= 0 && required > n.max_properties) {
      return "maxProperties " + std::to_string(n.max_properties) + " is below the " + std::to_string(required) +
             " required properties";
    }
    if (!n.extra_keys) {
      int64_t possible = 0;
      for (int32_t k : n.key_nodes) {
        possible += k == JsonGrammar::kAny || nodes[static_cast<size_t>(k)].kinds != 0;
      }
      if (n.min_properties > possible) {
        return "minProperties " + std::to_string(n.min_properties) + " is above the " + std::to_string(possible) +
               " properties the object may have (no additional properties)";
      }
    }
    return {};
  }

  // pattern and format (one format_pattern knows) of `s` into n->pattern, both when both
  // (their intersection). Errors name the keyword.
  Status read_pattern(const json& s, const std::string& path, Node* n) {
    std::shared_ptr<const RegexDfa> dfa;
    if (const auto it = s.find("pattern"); it != s.end()) {
      if (!it->is_string()) return invalid(path + ".pattern must be a string, got " + type_name(*it));
      GS_ASSIGN_OR_RETURN(dfa, compiled_pattern(it->get<std::string>(), path + ".pattern"));
    }
    if (const auto it = s.find("format"); it != s.end() && it->is_string()) {
      const std::string_view f = format_pattern(it->get<std::string>());
      if (!f.empty()) {
        GS_ASSIGN_OR_RETURN(auto fd, compiled_pattern(std::string(f), path + ".format"));
        if (!fd) {
          // (a tool call past the budget: the format is ignored as an unsupported pattern)
        } else if (dfa) {
          GS_ASSIGN_OR_RETURN(dfa, both_patterns(dfa, fd, path + ".format"));
          if (!dfa) return invalid(path + ".format: no string matches both the pattern and the format");
        } else {
          dfa = std::move(fd);
        }
      }
    }
    if (dfa) n->pattern = std::move(dfa);
    return {};
  }

  // The automaton of one pattern's source (compiled once per schema). Errors begin with `path`.
  // In a tool call (kGemmaCall) a pattern the compiler refuses is ignored instead (null), as
  // all were before: real tool schemas carry such patterns, and refusing one would drop the
  // whole grammar to the first-key fallback (decision 0027 point 9).
  Result<std::shared_ptr<const RegexDfa>> compiled_pattern(const std::string& source, const std::string& path) {
    if (const auto it = patterns_.find(source); it != patterns_.end()) return it->second;
    Result<RegexDfa> r = RegexDfa::compile(source, budget_);
    if (!r.ok() && syntax_ == JsonSyntax::kGemmaCall) {
      patterns_.emplace(source, nullptr);
      return std::shared_ptr<const RegexDfa>();
    }
    if (!r.ok()) return invalid(path + ": " + r.status().message());
    auto dfa = std::make_shared<const RegexDfa>(std::move(*r));
    patterns_.emplace(source, dfa);
    return std::shared_ptr<const RegexDfa>(dfa);
  }

  // The strings both automata take, null when none. Errors (past the limits or the budget)
  // begin with `path`.
  Result<std::shared_ptr<const RegexDfa>> both_patterns(const std::shared_ptr<const RegexDfa>& a,
                                                        const std::shared_ptr<const RegexDfa>& b,
                                                        const std::string& path) {
    if (a == b) return a;
    const auto key = std::make_pair(std::min(a.get(), b.get()), std::max(a.get(), b.get()));
    if (const auto it = products_.find(key); it != products_.end()) return it->second;
    Result<RegexDfa> r = RegexDfa::intersect(*a, *b, budget_);
    if (!r.ok()) return invalid(path + ": " + r.status().message());
    std::shared_ptr<const RegexDfa> dfa;
    if (r->size() > 0) dfa = std::make_shared<const RegexDfa>(std::move(*r));
    products_.emplace(key, dfa);
    return std::shared_ptr<const RegexDfa>(dfa);
  }

 public:
  // n->pattern_form from its pattern and lengths (none without a pattern, or for an enum,
  // whose values restrict_literals checks). False, with *why, when no string of those
  // lengths matches; errors (beginning with `path`) when the budget is spent (kGemmaCall: the
  // pattern is dropped instead).
  Result<bool> fill_string_form(Node* n, const std::string& path, std::string* why) {
    n->pattern_form = nullptr;
    if (!n->pattern || !(n->kinds & JsonGrammar::kString) || n->has_string_enum) return true;
    const auto key = std::make_tuple(n->pattern.get(), n->min_length, n->max_length);
    if (const auto it = forms_.find(key); it != forms_.end()) {
      n->pattern_form = it->second;
      return true;
    }
    const RegexDfa* base = n->pattern.get();
    std::optional<RegexDfa> no_lt;
    if (syntax_ == JsonSyntax::kGemmaCall) {
      // A tool call's string ends at `<|"|>` and has no escapes: a patterned one holds no '<'.
      // A pattern that needs one is ignored, as one the compiler refuses.
      Result<RegexDfa> r = n->pattern->without_code_point('<');
      if (!r.ok()) {
        n->pattern = nullptr;
        return true;
      }
      no_lt = std::move(*r);
      base = &*no_lt;
    }
    Result<RegexDfa> r = base->bounded(n->min_length, n->max_length, budget_);
    if (!r.ok()) {
      if (budget_->work < 0 || budget_->bytes < 0) {
        // In a tool call a pattern past the budget is ignored, as one the compiler refuses.
        if (syntax_ == JsonSyntax::kGemmaCall) {
          n->pattern = nullptr;
          return true;
        }
        return invalid(path + ": " + r.status().message());
      }
      *why = r.status().message();
      return false;
    }
    auto form = std::make_shared<const RegexDfa>(std::move(*r));
    forms_.emplace(key, form);
    n->pattern_form = std::move(form);
    return true;
  }

 private:

  Status read_array(const json& s, const std::string& path, int depth, Node* n) {
    if (s.contains("prefixItems")) return invalid(path + ".prefixItems: tuple schemas are not supported");
    if (auto it = s.find("items"); it != s.end()) {
      if (it->is_array()) return invalid(path + ".items: tuple schemas (an array of schemas) are not supported");
      GS_ASSIGN_OR_RETURN(n->items, compile(*it, path + ".items", depth + 1));
    }
    GS_RETURN_IF_ERROR(read_count(s, path, "minItems", &n->min_items));
    GS_RETURN_IF_ERROR(read_count(s, path, "maxItems", &n->max_items));
    if (n->max_items >= 0 && n->min_items > n->max_items) return no_value(path + ": minItems is above maxItems");
    // uniqueItems decides validity but the matcher keeps no record of the items written:
    // refused as the keywords in compile() are, unless at most one item may be written (then
    // it holds by itself). false asks for nothing. In a tool call it is ignored instead, as a
    // pattern the compiler refuses is there: refusing it would drop the whole grammar to the
    // first-key fallback (decision 0027 point 11).
    if (const auto u = s.find("uniqueItems"); u != s.end()) {
      if (!u->is_boolean()) return invalid(path + ".uniqueItems must be a boolean, got " + type_name(*u));
      const bool at_most_one = n->max_items >= 0 && n->max_items <= 1;
      if (u->get<bool>() && !at_most_one && syntax_ == JsonSyntax::kJson) {
        return invalid(path + ".uniqueItems: this keyword is not supported: it cannot be enforced while decoding "
                              "(only with maxItems 0 or 1, where it holds by itself)");
      }
    }
    return {};
  }

  // minimum, maximum, exclusiveMinimum, exclusiveMaximum as the integers they allow (n's
  // int_min, int_max narrowed) and as written (num_min, num_max); draft 4's boolean
  // exclusiveMinimum / exclusiveMaximum make the minimum / maximum beside them strict.
  // A bound of magnitude 10^38 or more bounds nothing the matcher writes where it is the
  // loose side (a minimum below -10^38) and is refused where no number would be left.
  // multipleOf: a number above 0.
  static Status read_integer_bounds(const json& s, const std::string& path, Node* n) {
    // Below 10^38 in magnitude (what a JsonInt holds).
    const auto held = [](const json& v) { return to_units(decimal_of(bound_value(v)), 0, false, false).has_value(); };
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      const auto it = s.find(k);
      if (it == s.end()) continue;
      if (it->is_number()) {
        const long double v = bound_value(*it);
        const bool lower = std::string_view(k).find("inimum") != std::string_view::npos;
        if (!held(*it) && (lower ? v > 0 : v < 0)) {
          return invalid(path + "." + k + ": a bound of magnitude 10^38 or more is not supported");
        }
        continue;
      }
      const bool draft4 = k[0] == 'e' && it->is_boolean();
      if (!draft4) return invalid(path + "." + k + " must be a number, got " + type_name(*it));
    }
    if (const auto it = s.find("multipleOf"); it != s.end()) {
      if (!it->is_number() || !(bound_value(*it) > 0)) return invalid(path + ".multipleOf must be a number above 0");
      const long double m = bound_value(*it);
      if (n->multiple_of == 0 || n->multiple_of == m) {
        n->multiple_of = m;
      } else {
        return invalid(path + ".multipleOf: two different multipleOf values on one schema are not supported");
      }
    }
    // Bounds of 10^38 or more on the loose side: no bound.
    auto flag = [&](const char* k) { return s.contains(k) && s[k].is_boolean() && s[k].get<bool>(); };
    if (const auto it = s.find("minimum"); it != s.end() && held(*it)) {
      n->int_min = std::max(n->int_min, integer_bound(*it, true, flag("exclusiveMinimum")));
      narrow_lower(n, bound_value(*it), flag("exclusiveMinimum"));
    }
    if (const auto it = s.find("maximum"); it != s.end() && held(*it)) {
      n->int_max = std::min(n->int_max, integer_bound(*it, false, flag("exclusiveMaximum")));
      narrow_upper(n, bound_value(*it), flag("exclusiveMaximum"));
    }
    if (const auto it = s.find("exclusiveMinimum"); it != s.end() && it->is_number() && held(*it)) {
      n->int_min = std::max(n->int_min, integer_bound(*it, true, true));
      narrow_lower(n, bound_value(*it), true);
    }
    if (const auto it = s.find("exclusiveMaximum"); it != s.end() && it->is_number() && held(*it)) {
      n->int_max = std::min(n->int_max, integer_bound(*it, false, true));
      narrow_upper(n, bound_value(*it), true);
    }
    return {};
  }

  static Status read_count(const json& s, const std::string& path, const char* key, int64_t* out) {
    auto it = s.find(key);
    if (it == s.end()) return {};
    // JSON Schema counts a number with a zero fraction (1.0) as an integer.
    if (it->is_number_float() && std::isfinite(it->get<double>()) && it->get<double>() >= 0 &&
        std::floor(it->get<double>()) == it->get<double>()) {
      const double v = it->get<double>();
      *out = v < 9.2e18 ? static_cast<int64_t>(v) : INT64_MAX;
      return {};
    }
    if (!it->is_number_integer() || (!it->is_number_unsigned() && it->get<int64_t>() < 0)) {
      return invalid(path + "." + key + " must be a non-negative integer");
    }
    *out = it->is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(it->get<uint64_t>(), INT64_MAX))
                                    : it->get<int64_t>();
    return {};
  }

  // A string as this syntax writes it between its delimiters.
  std::string spelling(const std::string& s) const { return syntax_ == JsonSyntax::kJson ? escaped(s) : s; }
  Result<std::string> key_spelling(const std::string& key, const std::string& path) const {
    if (syntax_ == JsonSyntax::kGemmaCall &&
        (key.empty() || key.find_first_of(" \t\r\n:,{}[]\"'<>=") != std::string::npos)) {
      return invalid(path + ": the key '" + key + "' cannot be written bare in a tool call");
    }
    return spelling(key);
  }

  Result<Node> literal_node(const json& s, const std::string& path) {
    std::vector<json> values;
    if (s.contains("enum")) {
      const json& e = s["enum"];
      if (!e.is_array() || e.empty()) return no_value(path + ".enum must be a non-empty array", e.is_array());
      values = e.get<std::vector<json>>();
    }
    if (s.contains("const")) {
      // Beside an enum, the const only if the enum lists it (numbers compare by value).
      if (s.contains("enum") && std::find(values.begin(), values.end(), s["const"]) == values.end()) {
        return no_value(path + ".const: the value is not one of enum's");
      }
      values = {s["const"]};
    }
    const std::string p = path + (s.contains("const") ? ".const" : ".enum");
    if (values.size() > static_cast<size_t>(kJsonMaxKeys)) {
      return invalid(p + ": more than " + std::to_string(kJsonMaxKeys) + " values");
    }
    Node n;
    n.kinds = 0;
    for (const json& v : values) {
      if (v.is_string()) {
        // In a call's arguments a value that holds the delimiter, or markup that ends the
        // call, cannot be written (the delimiter's bytes were taken up to its last one and
        // then none was; a call terminator ended the call there): such values are left out.
        if (syntax_ == JsonSyntax::kGemmaCall && !gemma_call_can_write(v.get_ref<const std::string&>())) {
          ++call_form_skips;
          continue;
        }
        n.kinds |= JsonGrammar::kString;
        n.has_string_enum = true;
        n.string_enum.push_back(spelling(v.get<std::string>()));
      } else if (v.is_number()) {
        n.kinds |= JsonGrammar::kNumber;
        n.has_number_enum = true;
        n.number_enum.push_back(v.dump());
      } else if (v.is_boolean()) {
        n.kinds |= v.get<bool>() ? JsonGrammar::kTrue : JsonGrammar::kFalse;
      } else if (v.is_null()) {
        n.kinds |= JsonGrammar::kNull;
      } else {
        return invalid(p + ": values that are objects or arrays are not supported");
      }
    }
    fill_literals(&n);
    return n;
  }

  // The string as it is of a spelled one (JSON text unescaped; the call form's is the text).
  std::string unspelled(const std::string& spelled) const {
    return syntax_ == JsonSyntax::kJson ? json::parse("\"" + spelled + "\"").get<std::string>() : spelled;
  }

  // The least and the greatest length of n's strings (-1: no greatest): an enum's values',
  // else its minLength and maxLength.
  std::pair<int64_t, int64_t> string_lengths(const Node& n) const {
    if (!n.has_string_enum || n.string_enum.empty()) return {n.min_length, n.max_length};
    int64_t lo = INT64_MAX;
    int64_t hi = 0;
    for (const std::string& v : n.string_enum) {
      const auto len = static_cast<int64_t>(utf8_chars(unspelled(v)));
      lo = std::min(lo, len);
      hi = std::max(hi, len);
    }
    return {lo, hi};
  }

  // Keeps the enum values of `n` that its other parts allow: the strings within its lengths,
  // the numbers within its bounds (integers only where `integer`); a kind whose values are
  // all gone leaves n's kinds.
  void restrict_literals(Node* n) const {
    if (n->has_number_enum) {
      std::erase_if(n->number_enum, [&](const std::string& text) {
        const json v = json::parse(text);
        return (n->integer && !is_integral(v)) || !number_within(v, *n);
      });
      if (n->number_enum.empty()) n->kinds &= static_cast<uint8_t>(~JsonGrammar::kNumber);
    }
    if (n->has_string_enum && (n->min_length > 0 || n->max_length >= 0 || n->pattern)) {
      std::erase_if(n->string_enum, [&](const std::string& spelled) {
        const std::string value = unspelled(spelled);
        const auto len = static_cast<int64_t>(utf8_chars(value));
        std::u32string cps;
        if (n->pattern && (!decode_utf8(value, &cps) || !n->pattern->matches(cps))) return true;
        return len < n->min_length || (n->max_length >= 0 && len > n->max_length);
      });
      if (n->string_enum.empty()) n->kinds &= static_cast<uint8_t>(~JsonGrammar::kString);
    }
  }

  // anyOf (and oneOf, proven exclusive): the values either allows. In the JSON syntax the
  // merge is exact or refused (decision 0027 point 2): alternatives of different kinds keep
  // each its own part; two of one kind merge only where one holds the other, their ranges
  // meet, their values can be listed (enums, integer ranges of at most kJsonMaxKeys values),
  // or, for objects, a discriminator tells them apart (make_dispatch). Anything else is an
  // error beginning with `path`. In a tool call (kGemmaCall) such pairs merge loosely, as
  // before (objects: a free object; strings: a free string; ranges: the span of both).
  Result<Node> merge_union(const Node& a, const Node& b, const std::string& path) {
    Node m = a;
    m.kinds = a.kinds | b.kinds;
    const bool loose_ok = syntax_ == JsonSyntax::kGemmaCall;
    const auto refuse = [&](const std::string& kind, const std::string& why) {
      return invalid(path + ": two of its alternatives both allow " + kind + ", and " + why +
                     "; such a union cannot be enforced exactly while decoding, so it is not supported (two "
                     "alternatives of one type are held only where one contains the other, their ranges meet, "
                     "their values can be listed, or, for objects, a required property with string const / enum "
                     "values tells them apart)");
    };
    const auto has = [](const Node& n, uint8_t k) { return (n.kinds & k) != 0; };
    if (has(b, JsonGrammar::kObject)) {
      const auto take_objects = [&m](const Node& n) {
        m.keys = n.keys;
        m.key_nodes = n.key_nodes;
        m.required = n.required;
        m.extra_keys = n.extra_keys;
        m.closed = n.closed;
        m.extra_node = n.extra_node;
        m.min_properties = n.min_properties;
        m.max_properties = n.max_properties;
        m.object_alts = n.object_alts;
        m.object_dispatch = n.object_dispatch;
      };
      if (!has(a, JsonGrammar::kObject)) {
        take_objects(b);
      } else if (same_objects(a, b) || free_object(a)) {
        // a's objects hold b's
      } else if (free_object(b)) {
        take_objects(b);
      } else if (!loose_ok) {
        std::vector<int32_t> alts = object_alternatives(a);
        for (int32_t i : object_alternatives(b)) alts.push_back(i);
        if (const std::string why = make_dispatch(alts, &m); !why.empty()) return refuse("objects", why);
      } else {
        m.keys.clear();
        m.key_nodes.clear();
        m.required.reset();
        m.extra_keys = true;
        m.closed = false;
        m.extra_node = JsonGrammar::kAny;
        m.object_alts.clear();
        m.object_dispatch.clear();
        // Property counts: those that span both (loosely).
        m.min_properties = std::min(a.min_properties, b.min_properties);
        m.max_properties =
            a.max_properties < 0 || b.max_properties < 0 ? -1 : std::max(a.max_properties, b.max_properties);
      }
    }
    if (has(b, JsonGrammar::kArray)) {
      const auto holds = [](const Node& o, const Node& i) {  // o's arrays hold i's
        return (o.items == JsonGrammar::kAny || o.items == i.items) && o.min_items <= i.min_items &&
               (o.max_items < 0 || (i.max_items >= 0 && i.max_items <= o.max_items));
      };
      const auto take_arrays = [&m](const Node& n) {
        m.items = n.items;
        m.min_items = n.min_items;
        m.max_items = n.max_items;
      };
      if (!has(a, JsonGrammar::kArray)) {
        take_arrays(b);
      } else if (holds(a, b)) {
        // a's arrays
      } else if (holds(b, a)) {
        take_arrays(b);
      } else if (a.items == b.items && counts_meet(a.min_items, a.max_items, b.min_items, b.max_items)) {
        m.min_items = std::min(a.min_items, b.min_items);
        m.max_items = a.max_items < 0 || b.max_items < 0 ? -1 : std::max(a.max_items, b.max_items);
      } else if (!loose_ok) {
        return refuse("arrays", "their item schemas differ or their item counts neither hold each other nor meet");
      } else {
        if (a.items != b.items) m.items = JsonGrammar::kAny;
        m.min_items = std::min(a.min_items, b.min_items);
        m.max_items = a.max_items < 0 || b.max_items < 0 ? -1 : std::max(a.max_items, b.max_items);
      }
    }
    if (has(b, JsonGrammar::kString)) {
      const auto take_strings = [&m](const Node& n) {
        m.has_string_enum = n.has_string_enum;
        m.string_enum = n.string_enum;
        m.min_length = n.min_length;
        m.max_length = n.max_length;
        m.pattern = n.pattern;
      };
      // o's strings (no enum) hold i's (no enum).
      const auto holds = [](const Node& o, const Node& i) {
        return (!o.pattern || o.pattern == i.pattern) && o.min_length <= i.min_length &&
               (o.max_length < 0 || (i.max_length >= 0 && i.max_length <= o.max_length));
      };
      if (!has(a, JsonGrammar::kString)) {
        take_strings(b);
      } else if (a.has_string_enum && b.has_string_enum) {
        // The values of both (each was filtered by its own lengths and pattern).
        if (a.pattern != b.pattern) m.pattern = nullptr;
        m.string_enum = a.string_enum;
        for (const auto& v : b.string_enum) {
          if (std::find(m.string_enum.begin(), m.string_enum.end(), v) == m.string_enum.end()) m.string_enum.push_back(v);
        }
        if (m.string_enum.size() > static_cast<size_t>(kJsonMaxKeys)) {
          return invalid(path + ": the alternatives' enums list more than " + std::to_string(kJsonMaxKeys) +
                         " strings");
        }
        // The lengths that span both's strings (an enum's: those of its values).
        const auto [a_lo, a_hi] = string_lengths(a);
        const auto [b_lo, b_hi] = string_lengths(b);
        m.min_length = std::min(a_lo, b_lo);
        m.max_length = a_hi < 0 || b_hi < 0 ? -1 : std::max(a_hi, b_hi);
      } else if (a.has_string_enum || b.has_string_enum) {
        const Node& e = a.has_string_enum ? a : b;
        const Node& g = a.has_string_enum ? b : a;
        const bool inside = std::all_of(e.string_enum.begin(), e.string_enum.end(),
                                        [&](const std::string& v) { return string_fits(v, g); });
        if (inside) {
          take_strings(g);
        } else if (!loose_ok) {
          GS_RETURN_IF_ERROR(unite_strings(a, b, path, &m));
        } else {
          m.has_string_enum = false;
          m.string_enum.clear();
          m.pattern = nullptr;
          const auto [e_lo, e_hi] = string_lengths(e);
          m.min_length = std::min(e_lo, g.min_length);
          m.max_length = e_hi < 0 || g.max_length < 0 ? -1 : std::max(e_hi, g.max_length);
        }
      } else if (holds(a, b)) {
        // a's strings
      } else if (holds(b, a)) {
        take_strings(b);
      } else if (a.pattern == b.pattern && counts_meet(a.min_length, a.max_length, b.min_length, b.max_length)) {
        m.min_length = std::min(a.min_length, b.min_length);
        m.max_length = a.max_length < 0 || b.max_length < 0 ? -1 : std::max(a.max_length, b.max_length);
      } else if (!loose_ok) {
        GS_RETURN_IF_ERROR(unite_strings(a, b, path, &m));
      } else {
        if (a.pattern != b.pattern) m.pattern = nullptr;
        m.min_length = std::min(a.min_length, b.min_length);
        m.max_length = a.max_length < 0 || b.max_length < 0 ? -1 : std::max(a.max_length, b.max_length);
      }
    }
    if (has(b, JsonGrammar::kNumber)) {
      if (!has(a, JsonGrammar::kNumber)) {
        take_numbers(&m, b);
      } else if (a.has_number_enum && b.has_number_enum) {
        m.integer = a.integer && b.integer;
        for (const auto& v : b.number_enum) {
          if (std::find(m.number_enum.begin(), m.number_enum.end(), v) == m.number_enum.end()) m.number_enum.push_back(v);
        }
        if (m.number_enum.size() > static_cast<size_t>(kJsonMaxKeys)) {
          return invalid(path + ": the alternatives' enums list more than " + std::to_string(kJsonMaxKeys) + " numbers");
        }
        span_bounds(&m, a, b);
      } else if (a.has_number_enum || b.has_number_enum) {
        const Node& e = a.has_number_enum ? a : b;
        const Node& g = a.has_number_enum ? b : a;
        std::string why;
        if (!union_enum_and_numbers(e, g, loose_ok, &m, &why)) return refuse("numbers", why);
      } else if (numbers_hold(a, b)) {
        // a's numbers
      } else if (numbers_hold(b, a)) {
        take_numbers(&m, b);
      } else if (a.integer && b.integer && a.multiple_of == b.multiple_of &&
                 (a.multiple_of == 0 ? a.int_min <= b.int_max + 1 && b.int_min <= a.int_max + 1
                                     : a.int_min <= b.int_max && b.int_min <= a.int_max)) {
        // Ranges that meet (or, without a multipleOf, adjoin): the range that spans both.
        m.int_min = std::min(a.int_min, b.int_min);
        m.int_max = std::max(a.int_max, b.int_max);
        span_bounds(&m, a, b);
      } else if (!a.integer && !b.integer && a.multiple_of == b.multiple_of && !below(a, b) && !below(b, a)) {
        span_bounds(&m, a, b);
      } else if (a.integer && b.integer && list_integers(a, b, &m)) {
        // Both listed.
      } else if (!loose_ok) {
        return refuse("numbers", "their ranges neither hold each other nor meet, and they are not integer ranges of at "
                                 "most " + std::to_string(kJsonMaxKeys) + " values in all (which would be listed)");
      } else {
        // Loosely: the range that spans both.
        m.integer = a.integer && b.integer;
        if (a.multiple_of != b.multiple_of) m.multiple_of = 0;
        m.int_min = std::min(a.integer ? a.int_min : -kJsonNoBound, b.integer ? b.int_min : -kJsonNoBound);
        m.int_max = std::max(a.integer ? a.int_max : kJsonNoBound, b.integer ? b.int_max : kJsonNoBound);
        span_bounds(&m, a, b);
      }
    }
    return m;
  }

  // The strings of a or b (no enum on one side at least) as one automaton, into m: each
  // side's enum, or its pattern within its lengths, as an automaton, and their union (a
  // product), with the lengths that span both. Errors: a length too large to build into an
  // automaton (kMaxUnionLength), or past the patterns' limits and budget.
  static constexpr int64_t kMaxUnionLength = 256;
  Status unite_strings(const Node& a, const Node& b, const std::string& path, Node* m) {
    GS_ASSIGN_OR_RETURN(const auto da, strings_automaton(a, path));
    GS_ASSIGN_OR_RETURN(const auto db, strings_automaton(b, path));
    Result<RegexDfa> r = RegexDfa::unite(*da, *db, budget_);
    if (!r.ok()) return invalid(path + ": the union of two alternatives' strings: " + r.status().message());
    m->pattern = std::make_shared<const RegexDfa>(std::move(*r));
    m->has_string_enum = false;
    m->string_enum.clear();
    const auto [a_lo, a_hi] = string_lengths(a);
    const auto [b_lo, b_hi] = string_lengths(b);
    m->min_length = std::min(a_lo, b_lo);
    m->max_length = a_hi < 0 || b_hi < 0 ? -1 : std::max(a_hi, b_hi);
    return {};
  }

  // n's strings as an automaton: its enum's values, or its pattern (any string without one)
  // within its lengths.
  Result<std::shared_ptr<const RegexDfa>> strings_automaton(const Node& n, const std::string& path) {
    const auto code_points = [](const std::string& text) {
      std::u32string cps;
      decode_utf8(text, &cps);
      std::string out;
      for (char32_t c : cps) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "\\u{%X}", static_cast<unsigned>(c));
        out += buf;
      }
      return out;
    };
    if (n.has_string_enum) {
      std::string source = "^(?:";
      for (size_t i = 0; i < n.string_enum.size(); ++i) {
        if (i > 0) source += "|";
        source += code_points(unspelled(n.string_enum[i]));
      }
      source += ")$";
      return compiled_pattern(source, path);
    }
    std::shared_ptr<const RegexDfa> dfa = n.pattern;
    if (n.min_length > 0 || n.max_length >= 0 || !dfa) {
      if (n.min_length > kMaxUnionLength || n.max_length > kMaxUnionLength) {
        return invalid(path + ": two of its alternatives both allow strings, and a minLength / maxLength above " +
                       std::to_string(kMaxUnionLength) + " cannot be built into the automaton of their union, so "
                       "it cannot be enforced exactly while decoding (string alternatives that neither hold each "
                       "other nor meet are held as one automaton)");
      }
      std::string lengths = "^[\\s\\S]{" + std::to_string(n.min_length) + "," +
                            (n.max_length >= 0 ? std::to_string(n.max_length) : std::string()) + "}$";
      GS_ASSIGN_OR_RETURN(auto ld, compiled_pattern(lengths, path));
      if (!dfa) {
        dfa = ld;
      } else {
        GS_ASSIGN_OR_RETURN(dfa, both_patterns(dfa, ld, path));
        if (!dfa) return invalid(path + ": an alternative's pattern matches no string of its lengths");
      }
    }
    return dfa;
  }

  // Two count ranges (max -1: none) that overlap or adjoin: their union is one range.
  static bool counts_meet(int64_t a_lo, int64_t a_hi, int64_t b_lo, int64_t b_hi) {
    return (a_hi < 0 || a_hi + 1 >= b_lo) && (b_hi < 0 || b_hi + 1 >= a_lo);
  }

  // An object part that allows every object.
  static bool free_object(const Node& n) {
    return n.object_alts.empty() && n.keys.empty() && n.extra_keys && n.extra_node == JsonGrammar::kAny &&
           n.min_properties == 0 && n.max_properties < 0;
  }
  static bool same_objects(const Node& a, const Node& b) {
    return a.object_alts == b.object_alts && a.object_dispatch == b.object_dispatch && a.keys == b.keys &&
           a.key_nodes == b.key_nodes && a.required == b.required && a.extra_keys == b.extra_keys &&
           a.closed == b.closed && a.extra_node == b.extra_node && a.min_properties == b.min_properties &&
           a.max_properties == b.max_properties;
  }

  // The object nodes of n's objects: the alternatives of the discriminated union it is, or
  // its object part as a node of its own (objects only).
  std::vector<int32_t> object_alternatives(const Node& n) {
    if (!n.object_alts.empty()) return n.object_alts;
    Node o = n;
    o.kinds = JsonGrammar::kObject;
    o.deferred.clear();
    fill_literals(&o);
    nodes.push_back(std::move(o));
    return {static_cast<int32_t>(nodes.size() - 1)};
  }

  // Makes m's objects the discriminated union of the object nodes `alts`: a key that each
  // declares and requires, with a value node that allows strings only, from an enum (or
  // const), and no value listed by two. The first such key of the first alternative is it.
  // Returns why none is, or empty.
  std::string make_dispatch(const std::vector<int32_t>& alts, Node* m) {
    if (alts.size() > static_cast<size_t>(kJsonMaxKeys)) {
      return "there are more than " + std::to_string(kJsonMaxKeys) + " object alternatives";
    }
    const Node& first = nodes[static_cast<size_t>(alts[0])];
    for (const std::string& key : first.keys) {
      std::vector<std::string> values;
      std::vector<int32_t> dispatch;
      std::set<std::string> listed;
      bool ok = true;
      for (size_t a = 0; a < alts.size() && ok; ++a) {
        const Node& o = nodes[static_cast<size_t>(alts[a])];
        const auto it = std::find(o.keys.begin(), o.keys.end(), key);
        const auto i = static_cast<size_t>(it - o.keys.begin());
        if (it == o.keys.end() || i >= kJsonMaxKeys || !o.required.test(i)) {
          ok = false;
          break;
        }
        const int32_t v = o.key_nodes[i];
        if (v == JsonGrammar::kAny || in_progress(v)) {
          ok = false;
          break;
        }
        const Node& vn = nodes[static_cast<size_t>(v)];
        if (vn.kinds != JsonGrammar::kString || !vn.has_string_enum || vn.string_enum.empty()) {
          ok = false;
          break;
        }
        for (const std::string& s : vn.string_enum) {
          if (!listed.insert(s).second) {
            ok = false;
            break;
          }
          values.push_back(s);
          dispatch.push_back(static_cast<int32_t>(a));
        }
      }
      if (!ok || values.size() > static_cast<size_t>(kJsonMaxKeys)) continue;
      Node disc;
      disc.kinds = JsonGrammar::kString;
      disc.has_string_enum = true;
      disc.string_enum = std::move(values);
      fill_literals(&disc);
      nodes.push_back(std::move(disc));
      m->keys = {key};
      m->key_nodes = {static_cast<int32_t>(nodes.size() - 1)};
      m->required.reset();
      m->required.set(0);
      m->extra_keys = false;
      m->closed = true;
      m->extra_node = JsonGrammar::kAny;
      m->min_properties = 0;
      m->max_properties = -1;
      m->object_alts = alts;
      m->object_dispatch = std::move(dispatch);
      return {};
    }
    return "no property tells them apart (a tagged union needs one that every alternative declares and requires, "
           "whose values are string consts or enums listed by no other alternative)";
  }

  // Whether the spelled string value v is one of g's strings (no enum): its lengths, pattern.
  bool string_fits(const std::string& spelled, const Node& g) const {
    const std::string value = unspelled(spelled);
    const auto len = static_cast<int64_t>(utf8_chars(value));
    if (len < g.min_length || (g.max_length >= 0 && len > g.max_length)) return false;
    std::u32string cps;
    return !g.pattern || (decode_utf8(value, &cps) && g.pattern->matches(cps));
  }

  static void take_numbers(Node* m, const Node& n) {
    m->integer = n.integer;
    m->int_min = n.int_min;
    m->int_max = n.int_max;
    m->num_min = n.num_min;
    m->num_min_exclusive = n.num_min_exclusive;
    m->num_max = n.num_max;
    m->num_max_exclusive = n.num_max_exclusive;
    m->multiple_of = n.multiple_of;
    m->has_number_enum = n.has_number_enum;
    m->number_enum = n.number_enum;
  }

  // m's bounds as written: those that span a's and b's.
  static void span_bounds(Node* m, const Node& a, const Node& b) {
    m->num_min = a.num_min;
    m->num_min_exclusive = a.num_min_exclusive;
    m->num_max = a.num_max;
    m->num_max_exclusive = a.num_max_exclusive;
    if (b.num_min < a.num_min || (b.num_min == a.num_min && !b.num_min_exclusive)) {
      m->num_min = b.num_min;
      m->num_min_exclusive = b.num_min_exclusive;
    }
    if (b.num_max > a.num_max || (b.num_max == a.num_max && !b.num_max_exclusive)) {
      m->num_max = b.num_max;
      m->num_max_exclusive = b.num_max_exclusive;
    }
  }

  // a's numbers (bounds as written) all lie below b's, with a gap or an excluded end between.
  static bool below(const Node& a, const Node& b) {
    return a.num_max < b.num_min || (a.num_max == b.num_min && a.num_max_exclusive && b.num_min_exclusive);
  }

  // o's numbers (no enum) hold i's (no enum): o is any number, or o's type, bounds and
  // multipleOf hold i's.
  static bool numbers_hold(const Node& o, const Node& i) {
    const Node any;
    if (!o.integer && o.num_min == any.num_min && o.num_max == any.num_max && o.multiple_of == 0) return true;
    if (o.multiple_of != 0 && o.multiple_of != i.multiple_of) return false;
    if (o.integer && !i.integer) return false;
    if (o.integer) return i.int_min >= o.int_min && i.int_max <= o.int_max;
    const bool lo = i.num_min > o.num_min || (i.num_min == o.num_min && (i.num_min_exclusive || !o.num_min_exclusive));
    const bool hi = i.num_max < o.num_max || (i.num_max == o.num_max && (i.num_max_exclusive || !o.num_max_exclusive));
    return lo && hi;
  }

  // The integers of a and b (integer nodes, no enum) listed into m as its number enum, when
  // both ranges are bounded and hold at most kJsonMaxKeys integers in all.
  static bool list_integers(const Node& a, const Node& b, Node* m) {
    std::vector<std::string> listed;
    for (const Node* n : {&a, &b}) {
      if (n->int_min <= -kJsonNoBound || n->int_max >= kJsonNoBound) return false;
      if (n->int_min > n->int_max) continue;
      const auto span = static_cast<JsonUInt>(n->int_max) - static_cast<JsonUInt>(n->int_min);
      if (span + 1 + listed.size() > static_cast<unsigned>(kJsonMaxKeys)) return false;
      for (JsonInt i = n->int_min; i <= n->int_max; ++i) {
        const std::string text = int_text(i);
        if (!multiple_within(json::parse(text), *n)) continue;
        if (std::find(listed.begin(), listed.end(), text) == listed.end()) listed.push_back(text);
      }
    }
    if (listed.size() > static_cast<size_t>(kJsonMaxKeys)) return false;
    span_bounds(m, a, b);
    m->integer = true;
    m->int_min = std::min(a.int_min, b.int_min);
    m->int_max = std::max(a.int_max, b.int_max);
    m->multiple_of = 0;
    m->has_number_enum = true;
    m->number_enum = std::move(listed);
    return true;
  }

  // The numbers of a union of `e`'s enum numbers and `g`'s numbers (no enum) into m's
  // number fields: g's when they hold every value; else, beside an integer range, the values
  // and the range's integers listed, when they are at most kJsonMaxKeys. Otherwise false
  // with *why, unless loose_ok (a tool call): then the range that spans both where every
  // value is an integer, or any number beside a number that is not an integer, as before.
  static bool union_enum_and_numbers(const Node& e, const Node& g, bool loose_ok, Node* m, std::string* why) {
    take_numbers(m, g);
    bool integral = true;
    bool inside = true;
    JsonInt lo = g.int_min;
    JsonInt hi = g.int_max;
    for (const std::string& text : e.number_enum) {
      const json v = json::parse(text);
      if (!number_within(v, g) || !multiple_within(v, g)) inside = false;
      Node whole;  // every integer a JsonInt holds
      if (!integer_within(v, whole)) {
        integral = false;
        if (g.integer) inside = false;
        continue;
      }
      const JsonInt i = integer_bound(v, false, false);
      if (g.integer && (i < g.int_min || i > g.int_max)) inside = false;
      lo = std::min(lo, i);
      hi = std::max(hi, i);
    }
    if (inside) return true;
    if (g.integer && g.int_min > -kJsonNoBound && g.int_max < kJsonNoBound && g.int_min <= g.int_max) {
      const auto span = static_cast<JsonUInt>(g.int_max) - static_cast<JsonUInt>(g.int_min);
      if (span + 1 + e.number_enum.size() <= static_cast<unsigned>(kJsonMaxKeys)) {
        m->integer = false;
        m->int_min = -kJsonNoBound;
        m->int_max = kJsonNoBound;
        m->multiple_of = 0;
        span_bounds(m, e, g);
        m->has_number_enum = true;
        m->number_enum = e.number_enum;
        for (JsonInt i = g.int_min; i <= g.int_max; ++i) {
          const std::string text = int_text(i);
          if (!multiple_within(json::parse(text), g)) continue;
          if (std::find(m->number_enum.begin(), m->number_enum.end(), text) == m->number_enum.end()) {
            m->number_enum.push_back(text);
          }
        }
        return true;
      }
    }
    if (!loose_ok) {
      *why = "an enum's number lies outside the other's range, which is too wide to list beside it (at most " +
             std::to_string(kJsonMaxKeys) + " values)";
      return false;
    }
    if (!g.integer) {
      m->multiple_of = 0;  // any number beside (loosely)
      span_bounds(m, e, g);
      return true;
    }
    if (integral) {
      m->int_min = lo;
      m->int_max = hi;
      m->multiple_of = 0;  // loosely, as the range
      span_bounds(m, e, g);
      return true;
    }
    *why = "an enum's number that is not an integer, beside an integer range too wide to list, is not supported";
    return false;
  }

  // allOf: the values both allow, into *a (objects take both's properties and requirements).
  // Errors: no value is left (`path` and the reason), or what cannot be intersected.
  Status merge_all(Node* a, const Node& b, const std::string& path, int depth) {
    std::string why;
    GS_RETURN_IF_ERROR(intersect(a, b, path, depth, &why));
    if (a->kinds == 0) return invalid(path + ": " + (why.empty() ? "the schemas allow no common value" : why));
    return {};
  }

  // The values both a and b allow, into *a. A kind of value that no longer has one leaves
  // a's kinds (none left: a->kinds == 0, and *why says first why, if empty). Errors only for
  // what cannot be intersected: nesting past kJsonMaxDepth, a union with an alternative still
  // to come, a reference still being compiled.
  Status intersect(Node* a, const Node& b, const std::string& path, int depth, std::string* why) {
    if (depth > kJsonMaxDepth) return invalid(path + ": the schema nests deeper than " + std::to_string(kJsonMaxDepth));
    // A union with an alternative still to come (resolve_deferred merges it in later, by
    // value, past this intersection): the keywords merged here would not hold for it.
    if (!a->deferred.empty() || !b.deferred.empty()) {
      return invalid(path + ": a schema that refers back into itself through anyOf / oneOf cannot be combined with "
                            "other keywords (allOf, or keywords beside $ref)");
    }
    const auto drop = [&](uint8_t kind, const std::string& reason) {
      a->kinds &= static_cast<uint8_t>(~kind);
      if (why->empty()) *why = reason;
    };
    if ((a->kinds & b.kinds) == 0) {
      a->kinds = 0;
      if (why->empty()) *why = "the schemas allow no common kind of value";
      return {};
    }
    a->kinds &= b.kinds;
    if ((a->kinds & JsonGrammar::kObject) && (!a->object_alts.empty() || !b.object_alts.empty())) {
      GS_RETURN_IF_ERROR(intersect_dispatch(a, b, path, depth, why));
    } else if (a->kinds & JsonGrammar::kObject) {
      GS_RETURN_IF_ERROR(intersect_objects(a, b, path, depth, why));
    }
    if (b.has_string_enum) {
      if (!a->has_string_enum) {
        a->string_enum = b.string_enum;
      } else {
        std::erase_if(a->string_enum, [&](const std::string& v) {
          return std::find(b.string_enum.begin(), b.string_enum.end(), v) == b.string_enum.end();
        });
      }
      a->has_string_enum = true;
      if (a->string_enum.empty()) drop(JsonGrammar::kString, "the enums have no common string");
    }
    if (b.has_number_enum) {
      if (!a->has_number_enum) {
        a->number_enum = b.number_enum;
      } else {
        // By value: 7 and 7.0 are one number.
        std::erase_if(a->number_enum, [&](const std::string& v) {
          const json x = json::parse(v);
          return std::none_of(b.number_enum.begin(), b.number_enum.end(),
                              [&](const std::string& w) { return json::parse(w) == x; });
        });
      }
      a->has_number_enum = true;
      if (a->number_enum.empty()) drop(JsonGrammar::kNumber, "the enums have no common number");
    }
    if (b.integer) a->integer = true;
    if (b.multiple_of > 0 && a->multiple_of != b.multiple_of) {
      if (a->multiple_of == 0) {
        a->multiple_of = b.multiple_of;
      } else if (const long double big = std::max(a->multiple_of, b.multiple_of), small = std::min(a->multiple_of, b.multiple_of);
                 std::floor(big / small) == big / small && std::floor(small) == small && big < 1e18L) {
        a->multiple_of = big;  // integers, one a multiple of the other
      } else {
        return invalid(path + ": two different multipleOf values, one not a multiple of the other, are not supported");
      }
    }
    a->int_min = std::max(a->int_min, b.int_min);
    a->int_max = std::min(a->int_max, b.int_max);
    narrow_lower(a, b.num_min, b.num_min_exclusive);
    narrow_upper(a, b.num_max, b.num_max_exclusive);
    if (b.max_length >= 0 && (a->max_length < 0 || b.max_length < a->max_length)) a->max_length = b.max_length;
    a->min_length = std::max(a->min_length, b.min_length);
    if (b.pattern && a->pattern != b.pattern) {
      if (!a->pattern) {
        a->pattern = b.pattern;
      } else {
        GS_ASSIGN_OR_RETURN(std::shared_ptr<const RegexDfa> both, both_patterns(a->pattern, b.pattern, path + ".pattern"));
        if (both) {
          a->pattern = std::move(both);
        } else {
          drop(JsonGrammar::kString, "no string matches both patterns");
        }
      }
    }
    // An enum's values: those within both's bounds and lengths; no enum: some integer must be.
    const uint8_t before = a->kinds;
    restrict_literals(a);
    if (a->kinds != before && why->empty()) *why = "no enum value lies within the bounds and lengths of both";
    if (std::string reason; (a->kinds & JsonGrammar::kNumber) && !a->has_number_enum && !fill_number_form(a, &reason)) {
      drop(JsonGrammar::kNumber, reason + " (of both)");
    }
    if ((a->kinds & JsonGrammar::kString) && a->max_length >= 0 && a->min_length > a->max_length) {
      drop(JsonGrammar::kString, "no string length lies within the lengths of both");
    }
    if (a->kinds & JsonGrammar::kString) {
      std::string reason;
      GS_ASSIGN_OR_RETURN(const bool fits, fill_string_form(a, path, &reason));
      if (!fits) drop(JsonGrammar::kString, "no string within the lengths of both matches the patterns: " + reason);
    }
    if (b.max_items >= 0 && (a->max_items < 0 || b.max_items < a->max_items)) a->max_items = b.max_items;
    a->min_items = std::max(a->min_items, b.min_items);
    if ((a->kinds & JsonGrammar::kArray) && a->max_items >= 0 && a->min_items > a->max_items) {
      drop(JsonGrammar::kArray, "no item count lies within minItems and maxItems of both");
    }
    if (a->kinds & JsonGrammar::kArray) {
      GS_ASSIGN_OR_RETURN(const int32_t items, intersect_nodes(a->items, b.items, path + ".items", depth));
      if (items != kNoValue) {
        a->items = items;
      } else if (a->min_items > 0) {
        drop(JsonGrammar::kArray, "the items allow no common value and an item is required");
      } else {
        a->max_items = 0;  // only the empty array
      }
    }
    if (a->kinds == 0 && why->empty()) *why = "the schemas allow no common value";
    return {};
  }

  // The node of the values both node a and node b allow (one of them when the other allows
  // any value or they are one), or kNoValue when there is none.
  static constexpr int32_t kNoValue = -2;
  Result<int32_t> intersect_nodes(int32_t a, int32_t b, const std::string& path, int depth) {
    if (b == JsonGrammar::kAny || b == a) return a;
    if (a == JsonGrammar::kAny) return b;
    if (in_progress(a) || in_progress(b)) {
      return invalid(path + ": a reference back into itself cannot be combined with other keywords here (allOf)");
    }
    Node both = nodes[static_cast<size_t>(a)];
    std::string why;
    GS_RETURN_IF_ERROR(intersect(&both, nodes[static_cast<size_t>(b)], path, depth + 1, &why));
    if (both.kinds == 0) return kNoValue;
    fill_literals(&both);
    nodes.push_back(std::move(both));
    return static_cast<int32_t>(nodes.size() - 1);
  }

  // A node that allows no value: the value of a key that may not be written (the matcher
  // begins no key whose value cannot be finished).
  int32_t no_value_node() {
    if (no_value_ < 0) {
      Node n;
      n.kinds = 0;
      fill_literals(&n);
      nodes.push_back(std::move(n));
      no_value_ = static_cast<int32_t>(nodes.size() - 1);
    }
    return no_value_;
  }

  // intersect's objects where one side is a discriminated union (Node::object_alts): each
  // of its alternatives intersected with the other side's objects, those left told apart
  // again. Two such unions are refused.
  Status intersect_dispatch(Node* a, const Node& b, const std::string& path, int depth, std::string* why) {
    if (!a->object_alts.empty() && !b.object_alts.empty()) {
      return invalid(path + ": two unions of object schemas told apart by a property cannot be combined (allOf, or "
                            "keywords beside $ref)");
    }
    const bool a_union = !a->object_alts.empty();
    const std::vector<int32_t> alts = a_union ? a->object_alts : b.object_alts;
    Node other = a_union ? b : *a;
    other.kinds = JsonGrammar::kObject;
    other.deferred.clear();
    fill_literals(&other);
    nodes.push_back(std::move(other));
    const auto other_index = static_cast<int32_t>(nodes.size() - 1);
    std::vector<int32_t> kept;
    for (int32_t alt : alts) {
      GS_ASSIGN_OR_RETURN(const int32_t both, intersect_nodes(alt, other_index, path, depth));
      if (both != kNoValue && (nodes[static_cast<size_t>(both)].kinds & JsonGrammar::kObject)) kept.push_back(both);
    }
    if (kept.empty()) {
      a->kinds &= static_cast<uint8_t>(~JsonGrammar::kObject);
      if (why->empty()) *why = "no object alternative allows an object that the other schema allows";
      return {};
    }
    if (const std::string reason = make_dispatch(kept, a); !reason.empty()) {
      return invalid(path + ": a union of object schemas, combined with other keywords, is no longer told apart: " +
                     reason);
    }
    return {};
  }

  // intersect's objects: a key stays when each side declares it or does not close itself
  // (additionalProperties false); a key both declare takes both schemas, as do extra keys;
  // the required keys of both must stay. Where they cannot, objects leave a's kinds.
  Status intersect_objects(Node* a, const Node& b, const std::string& path, int depth, std::string* why) {
    const auto no_objects = [&](const std::string& reason) {
      a->kinds &= static_cast<uint8_t>(~JsonGrammar::kObject);
      if (why->empty()) *why = reason;
      return Status{};
    };
    const auto find = [](const Node& n, const std::string& k) {
      for (size_t i = 0; i < n.keys.size(); ++i) {
        if (n.keys[i] == k) return static_cast<int>(i);
      }
      return -1;
    };
    Node m;
    m.extra_keys = a->extra_keys && b.extra_keys;
    m.closed = a->closed || b.closed;
    m.extra_node = JsonGrammar::kAny;
    if (m.extra_keys) {
      GS_ASSIGN_OR_RETURN(m.extra_node, intersect_nodes(a->extra_node, b.extra_node, path + ".additionalProperties", depth));
      if (m.extra_node == kNoValue) {
        m.extra_keys = false;  // no value fits an extra key
        m.extra_node = JsonGrammar::kAny;
      }
    }
    std::vector<std::string> all = a->keys;
    for (const auto& k : b.keys) {
      if (find(*a, k) < 0) all.push_back(k);
    }
    for (const auto& k : all) {
      const int ia = find(*a, k);
      const int ib = find(b, k);
      const bool in_a = ia >= 0 || !a->closed;
      const bool in_b = ib >= 0 || !b.closed;
      const bool req = (ia >= 0 && a->required.test(static_cast<size_t>(ia))) ||
                       (ib >= 0 && b.required.test(static_cast<size_t>(ib)));
      if (!in_a || !in_b) {
        if (req) return no_objects("the required key '" + k + "' is not allowed by every schema");
        continue;
      }
      const int32_t na = ia >= 0 ? a->key_nodes[static_cast<size_t>(ia)] : a->extra_node;
      const int32_t nb = ib >= 0 ? b.key_nodes[static_cast<size_t>(ib)] : b.extra_node;
      GS_ASSIGN_OR_RETURN(int32_t node, intersect_nodes(na, nb, path + ".properties." + k, depth));
      if (node == kNoValue) {
        if (req) return no_objects("the required key '" + k + "' allows no value of both schemas");
        node = no_value_node();  // declared, so that it is not written as an extra key either
      }
      if (m.keys.size() >= static_cast<size_t>(kJsonMaxKeys)) {
        return invalid(path + ": more than " + std::to_string(kJsonMaxKeys) + " properties");
      }
      if (req) m.required.set(m.keys.size());
      m.keys.push_back(k);
      m.key_nodes.push_back(node);
    }
    a->keys = std::move(m.keys);
    a->key_nodes = std::move(m.key_nodes);
    a->required = m.required;
    a->extra_keys = m.extra_keys;
    a->closed = m.closed;
    a->extra_node = m.extra_node;
    a->min_properties = std::max(a->min_properties, b.min_properties);
    if (b.max_properties >= 0 && (a->max_properties < 0 || b.max_properties < a->max_properties)) {
      a->max_properties = b.max_properties;
    }
    if (const std::string problem = object_count_problem(*a); !problem.empty()) return no_objects(problem + " (of both)");
    return {};
  }

  const json& root_;
  JsonSyntax syntax_;
  std::map<const json*, int32_t> refs_;  // the node of each schema a reference names
  std::set<int32_t> building_;  // references reserved and not yet compiled
  int32_t no_value_ = -1;       // no_value_node's index, once made
  // Patterns: what all of this schema's may spend (its own budget, or one shared with the
  // other schemas of a request), and each compiled once (by source, by pair intersected, by
  // lengths bounded).
  RegexBudget own_budget_;
  RegexBudget* budget_;
  std::map<std::string, std::shared_ptr<const RegexDfa>> patterns_;
  std::map<std::pair<const RegexDfa*, const RegexDfa*>, std::shared_ptr<const RegexDfa>> products_;
  std::map<std::tuple<const RegexDfa*, int64_t, int64_t>, std::shared_ptr<const RegexDfa>> forms_;
};

// Node::object_depth / array_depth / min_depth of every node: the least fixed point of
// their definitions, from "none" (kJsonMaxDepth + 1) down; each pass can only lower a value,
// so it ends after at most one pass per node and level.
void fill_depths(std::vector<JsonGrammar::Node>* nodes) {
  constexpr int32_t kNone = kJsonMaxDepth + 1;
  for (JsonGrammar::Node& n : *nodes) n.object_depth = n.array_depth = n.min_depth = kNone;
  const auto md = [&](int32_t i) {
    return i < 0 || i >= static_cast<int32_t>(nodes->size()) ? 0 : (*nodes)[static_cast<size_t>(i)].min_depth;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (JsonGrammar::Node& n : *nodes) {
      int32_t obj = kNone, arr = kNone, scalar = kNone;
      if ((n.kinds & JsonGrammar::kObject) && !n.object_alts.empty()) {
        // A discriminated union: its shallowest alternative.
        for (int32_t alt : n.object_alts) obj = std::min(obj, md(alt));
      } else if (n.kinds & JsonGrammar::kObject) {
        int32_t inner = 0;
        std::vector<int32_t> optional;  // the depths of the keys that minProperties may add
        for (size_t k = 0; k < n.keys.size() && k < kJsonMaxKeys; ++k) {
          if (n.required[k]) {
            inner = std::max(inner, md(n.key_nodes[k]));
          } else {
            optional.push_back(md(n.key_nodes[k]));
          }
        }
        const int64_t more = n.min_properties - static_cast<int64_t>(n.required.count());
        if (more > 0) {
          // The shallowest keys beyond the required ones (extra keys: as many as needed).
          std::sort(optional.begin(), optional.end());
          const int32_t extra = n.extra_keys ? md(n.extra_node) : kNone;
          int32_t deepest = 0;
          size_t used = 0;
          for (int64_t i = 0; i < more; ++i) {
            if (used == optional.size() || optional[used] > extra) {
              deepest = std::max(deepest, extra);  // the rest are extra keys
              break;
            }
            deepest = std::max(deepest, optional[used++]);
          }
          inner = std::max(inner, deepest);
        }
        obj = std::min(kNone, 1 + inner);
      }
      if (n.kinds & JsonGrammar::kArray) arr = std::min(kNone, n.min_items > 0 ? 1 + md(n.items) : 1);
      const bool strings = (n.kinds & JsonGrammar::kString) && !(n.has_string_enum && n.string_enum.empty());
      const bool numbers = (n.kinds & JsonGrammar::kNumber) && !(n.has_number_enum && n.number_enum.empty());
      if (strings || numbers || (n.kinds & (JsonGrammar::kTrue | JsonGrammar::kFalse | JsonGrammar::kNull)))
        scalar = 0;
      const int32_t m = std::min({obj, arr, scalar});
      if (obj != n.object_depth || arr != n.array_depth || m != n.min_depth) {
        n.object_depth = obj;
        n.array_depth = arr;
        n.min_depth = m;
        changed = true;
      }
    }
  }
  for (JsonGrammar::Node& n : *nodes) {
    n.key_depth = n.extra_keys ? md(n.extra_node) : 0;
    for (size_t k = 0; k < n.keys.size() && k < kJsonMaxKeys; ++k)
      n.key_depth = std::max(n.key_depth, md(n.key_nodes[k]));
  }
}

std::shared_ptr<const JsonGrammar> JsonGrammar::any_object() {
  static const std::shared_ptr<const JsonGrammar> g = [] {
    auto grammar = std::make_shared<JsonGrammar>();
    Node n;
    n.kinds = kObject;
    fill_literals(&n);
    grammar->nodes_.push_back(std::move(n));
    return grammar;
  }();
  return g;
}

Result<std::shared_ptr<const JsonGrammar>> JsonGrammar::from_schema(const json& schema, const std::string& path,
                                                                     JsonSyntax syntax, RegexBudget* budget) {
  JsonSchemaCompiler compiler(schema, syntax, budget);
  // The root first, so that it is node 0 (a reference to "#" finds it there).
  compiler.nodes.emplace_back();
  GS_ASSIGN_OR_RETURN(int32_t root, compiler.compile(schema, path, 0));
  if (root == kAny) {
    compiler.nodes[0] = any_node();
  } else {
    compiler.nodes[0] = compiler.nodes[static_cast<size_t>(root)];
  }
  GS_RETURN_IF_ERROR(compiler.resolve_deferred(path));
  for (Node& n : compiler.nodes) {
    // Unions merged after their alternatives were checked: a number form that allows nothing
    // drops the numbers (each alternative had one, so the span of theirs has too).
    if (std::string why; (n.kinds & kNumber) && !n.has_number_enum && !fill_number_form(&n, &why)) {
      n.kinds &= static_cast<uint8_t>(~kNumber);
    }
    // The same for strings: every node's form from its pattern and lengths as merged.
    std::string why;
    GS_ASSIGN_OR_RETURN(const bool fits, compiler.fill_string_form(&n, path, &why));
    if (!fits) n.kinds &= static_cast<uint8_t>(~kString);
  }
  for (Node& n : compiler.nodes) {
    n.key_hashes.clear();
    for (const std::string& k : n.keys) n.key_hashes.push_back(key_hash_of(k, syntax));
  }
  fill_depths(&compiler.nodes);
  if (compiler.nodes[0].min_depth > kJsonMaxDepth) {
    return invalid(path + ": no value satisfies it within " + std::to_string(kJsonMaxDepth) +
                   " levels of nesting (a required property or item leads back into the schema with no way to "
                   "stop)");
  }
  auto grammar = std::make_shared<JsonGrammar>();
  grammar->nodes_ = std::move(compiler.nodes);
  grammar->syntax_ = syntax;
  return std::shared_ptr<const JsonGrammar>(std::move(grammar));
}

Status check_schema_values(const json& schema, const std::string& path, JsonSyntax syntax) {
  JsonSchemaCompiler compiler(schema, syntax, nullptr);
  compiler.nodes.emplace_back();
  const Result<int32_t> root = compiler.compile(schema, path, 0);
  if (!root.ok() && compiler.admits_no_value) return root.status();
  return {};
}

Status check_schema_refs(const json& schema, const std::string& path) {
  std::set<const json*> seen;
  return check_refs(schema, path, schema, path, 0, &seen);
}

const JsonGrammar::Node& JsonGrammar::node(int32_t index) const {
  if (index < 0 || index >= size()) return any_node();
  return nodes_[static_cast<size_t>(index)];
}

// ---------------------------------------------------------------------------------------
// Matcher

JsonMatcher::JsonMatcher(std::shared_ptr<const JsonGrammar> grammar) : grammar_(std::move(grammar)) {
  Frame f;
  f.node = grammar_ && grammar_->size() > 0 ? 0 : JsonGrammar::kAny;
  stack_.push_back(f);
}

bool JsonMatcher::feed(std::string_view bytes) {
  for (char ch : bytes) {
    if (!feed(static_cast<unsigned char>(ch))) return false;
  }
  return true;
}

bool JsonMatcher::feed(unsigned char c) {
  if (done_ || stack_.empty()) return false;
  const bool ws = c == ' ' || c == '\t' || c == '\n' || c == '\r';
  switch (stack_.back().type) {
    case Frame::kValue:
      return feed_value(c, ws);
    case Frame::kObject:
      return feed_object(c, ws);
    case Frame::kArray:
      return feed_array(c, ws);
    case Frame::kString:
      if (grammar_->syntax() == JsonSyntax::kGemmaCall) return stack_.back().is_key ? feed_bare_key(c) : feed_gemma_string(c);
      return feed_string(c);
    case Frame::kNumber:
      return feed_number(c, ws);
    case Frame::kLiteral:
      return feed_literal(c, ws);
  }
  return false;
}

bool JsonMatcher::can_end() const {
  if (done_) return true;
  if (stack_.size() != 1) return false;
  const Frame& f = stack_.back();
  if (f.type == Frame::kNumber) return number_complete(f);
  if (f.type == Frame::kLiteral) {
    const auto& lits = grammar_->node(f.node).literals;
    for (size_t i = 0; i < lits.size(); ++i) {
      if (f.cand.test(i) && lits[i].size() == static_cast<size_t>(f.pos)) return true;
    }
  }
  return false;
}

int64_t JsonMatcher::free_string_room() const {
  if (done_ || stack_.empty()) return -1;
  const Frame& f = stack_.back();
  if (f.type != Frame::kString || !f.free || f.esc != 0 || f.utf8_need != 0 || f.low_surrogate_next || f.delim != 0 ||
      f.opening || f.mark != 0) {
    return -1;
  }
  if (f.is_key && grammar_->syntax() == JsonSyntax::kGemmaCall) return -1;  // a bare key takes fewer bytes
  if (!f.is_key && grammar_->node(f.node).pattern_form) return -1;          // a pattern decides each character
  const int64_t max = f.is_key ? -1 : grammar_->node(f.node).max_length;
  return max < 0 ? INT64_MAX : std::max<int64_t>(max - f.length, 0);
}

bool JsonMatcher::take_ws(unsigned char c) {
  if (grammar_->syntax() == JsonSyntax::kGemmaCall) return false;  // the call form has no whitespace
  if (ws_run_ == 0) {
    if (c != ' ' && c != '\n') return false;
    ws_newline_ = c == '\n';
  } else if (!ws_newline_ || (c != ' ' && c != '\t') || ws_run_ > kJsonMaxIndent) {
    return false;
  }
  ++ws_run_;
  return true;
}

int JsonMatcher::depth() const {
  int d = 0;
  for (const Frame& f : stack_) d += f.type == Frame::kObject || f.type == Frame::kArray;
  return d;
}

void JsonMatcher::pop_finished() {
  if (stack_.back().type == Frame::kObject) key_hashes_.resize(static_cast<size_t>(stack_.back().hash_base));
  stack_.pop_back();
  if (stack_.empty()) {
    done_ = true;
    return;
  }
  Frame& p = stack_.back();
  if (p.type == Frame::kObject) {
    p.phase = kObjNext;
  } else if (p.type == Frame::kArray) {
    ++p.count;
    p.phase = kArrNext;
  }
}

bool JsonMatcher::end_and_feed(unsigned char c) {
  if (stack_.size() < 2) return false;  // a top-level value: nothing may follow it
  const Frame child = stack_.back();
  const Frame parent = stack_[stack_.size() - 2];
  const int32_t ws_run = ws_run_;
  const bool ws_newline = ws_newline_;
  pop_finished();
  if (feed(c)) return true;
  stack_.back() = parent;
  stack_.push_back(child);
  ws_run_ = ws_run;
  ws_newline_ = ws_newline;
  return false;
}

bool JsonMatcher::feed_value(unsigned char c, bool ws) {
  if (ws) return stack_.size() > 1 && take_ws(c);  // the text begins with its value
  return start_value(c);
}

bool JsonMatcher::start_value(unsigned char c) {
  Frame& top = stack_.back();
  const Node& n = grammar_->node(top.node);
  Frame f;
  f.node = top.node;
  if (c == '{' || c == '[') {
    const bool object = c == '{';
    if (!(n.kinds & (object ? JsonGrammar::kObject : JsonGrammar::kArray))) return false;
    // Only a value that can be finished within the depth (its required parts included).
    if (depth() + (object ? n.object_depth : n.array_depth) > kJsonMaxDepth) return false;
    f.type = object ? Frame::kObject : Frame::kArray;
    f.phase = object ? kObjOpen : kArrOpen;
    f.hash_base = static_cast<int32_t>(key_hashes_.size());
  } else if (c == (grammar_->syntax() == JsonSyntax::kGemmaCall ? '<' : '"')) {
    if (!(n.kinds & JsonGrammar::kString)) return false;
    f.type = Frame::kString;
    f.free = !n.has_string_enum;
    f.cand = first_n(n.string_enum.size());
    if (grammar_->syntax() == JsonSyntax::kGemmaCall) {
      f.opening = true;  // `<` of the opening `<|"|>` read
      f.delim = 1;
    }
  } else if ((c == '-' || is_digit(c)) && (n.kinds & JsonGrammar::kNumber) && !n.has_number_enum &&
             (!n.num_exact || exact_may_begin(n, c))) {
    f.type = Frame::kNumber;
    f.phase = c == '-' ? kNMinus : c == '0' ? kNZero : kNInt;
    f.digits = is_digit(c) ? 1 : 0;
    f.negative = c == '-';
    f.value = is_digit(c) ? c - '0' : 0;
  } else {
    // Literals: true, false, null, and the numbers of an enum.
    f.type = Frame::kLiteral;
    for (size_t i = 0; i < n.literals.size(); ++i) {
      if (!n.literals[i].empty() && static_cast<unsigned char>(n.literals[i][0]) == c) f.cand.set(i);
    }
    if (f.cand.none()) return false;
    f.pos = 1;
  }
  top = f;
  ws_run_ = 0;
  return true;
}

bool JsonMatcher::feed_object(unsigned char c, bool ws) {
  Frame& f = stack_.back();
  const Node& n = grammar_->node(f.node);
  // Keys whose values can still be finished within the depth (this object's level
  // counted): the only ones a new key may become, and extra keys only when theirs can.
  // (A free key spelling a declared one that does not fit is refused when it closes.)
  const int room = kJsonMaxDepth - depth();
  const std::bitset<kJsonMaxKeys> declared = first_n(n.keys.size());
  std::bitset<kJsonMaxKeys> fitting = declared;
  bool extra_keys = n.extra_keys;
  if (n.key_depth > room) {  // near the limit: key by key
    for (size_t k = 0; k < n.keys.size() && k < kJsonMaxKeys; ++k)
      if (grammar_->node(n.key_nodes[k]).min_depth > room) fitting.reset(k);
    extra_keys = extra_keys && grammar_->node(n.extra_node).min_depth <= room;
  }
  // Property counts: no key past maxProperties, and where the required keys still due
  // would fill it, only they (else they would not fit); `}` once minProperties are written.
  const auto required_due = static_cast<int64_t>((n.required & ~f.seen).count());
  const bool room_for_key = n.max_properties < 0 || f.count < n.max_properties;
  if (n.max_properties >= 0 && f.count + required_due >= n.max_properties) {
    fitting &= n.required;
    extra_keys = false;
  }
  if (!room_for_key) {
    fitting.reset();
    extra_keys = false;
  }
  const bool unseen_key = (fitting & ~f.seen).any();
  const bool closable = required_due == 0 && f.count >= n.min_properties;
  switch (f.phase) {
    case kObjOpen:
    case kObjComma:
    case kObjNext:
      if (ws) return take_ws(c);
      if (c == '}' && f.phase != kObjComma && closable) {
        ws_run_ = 0;
        pop_finished();
        return true;
      }
      if (c == ',' && f.phase == kObjNext && (extra_keys || unseen_key)) {
        f.phase = kObjComma;
        ws_run_ = 0;
        return true;
      }
      if (f.phase != kObjNext && (extra_keys || unseen_key)) {
        const bool bare = grammar_->syntax() == JsonSyntax::kGemmaCall;
        if (!bare && c != '"') return false;
        Frame k;
        k.type = Frame::kString;
        k.node = f.node;
        k.is_key = true;
        k.free = extra_keys;
        k.cand = extra_keys ? declared : fitting & ~f.seen;
        const uint8_t phase = f.phase;
        f.phase = kObjKey;
        stack_.push_back(k);
        if (bare && !feed_bare_key(c)) {  // a bare key's first byte is part of it
          stack_.pop_back();
          stack_.back().phase = phase;
          return false;
        }
        ws_run_ = 0;
        return true;
      }
      return false;
    case kObjColon:
      if (ws) return take_ws(c);
      if (c != ':') return false;
      f.phase = kObjValue;
      {
        Frame v;
        v.node = f.value_node;
        ws_run_ = 0;
        stack_.push_back(v);
      }
      return true;
    default:
      return false;
  }
}

bool JsonMatcher::feed_array(unsigned char c, bool ws) {
  Frame& f = stack_.back();
  const Node& n = grammar_->node(f.node);
  switch (f.phase) {
    case kArrOpen:
    case kArrComma:
    case kArrNext:
      if (ws) return take_ws(c);
      if (c == ']' && f.phase != kArrComma && f.count >= n.min_items) {
        ws_run_ = 0;
        pop_finished();
        return true;
      }
      if (c == ',' && f.phase == kArrNext && (n.max_items < 0 || f.count < n.max_items)) {
        f.phase = kArrComma;
        ws_run_ = 0;
        return true;
      }
      if (f.phase != kArrNext && (n.max_items < 0 || f.count < n.max_items)) {
        const uint8_t phase = f.phase;
        f.phase = kArrValue;
        Frame v;
        v.node = n.items;
        stack_.push_back(v);
        if (start_value(c)) return true;
        stack_.pop_back();
        stack_.back().phase = phase;
        return false;
      }
      return false;
    default:
      return false;
  }
}

bool JsonMatcher::feed_string(unsigned char c) {
  Frame s = stack_.back();  // changed on a copy, stored back when c is taken
  bool closes = false;
  bool new_char = false;  // c begins a character (counts toward the length)
  bool complete = false;  // c ends a character: code point `cp`
  uint32_t cp = 0;
  if (s.esc == 1) {
    if (s.low_surrogate_next) {
      if (c != 'u') return false;
    } else if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' && c != 't' &&
               c != 'u') {
      return false;
    }
    s.esc = c == 'u' ? 2 : 0;
    s.hex = 0;
    if (c != 'u') {
      complete = true;
      cp = escaped_code_point(c);
    }
  } else if (s.esc >= 2) {
    if (!is_hex(c)) return false;
    const int k = s.esc - 2;  // which digit
    const int v = hex_value(c);
    if (s.low_surrogate_next) {
      if ((k == 0 && v != 0xD) || (k == 1 && v < 0xC)) return false;  // DC00..DFFF
    } else if (k == 1 && s.hex == 0xD && v >= 0xC) {
      return false;  // a low surrogate with no high one before it
    }
    s.hex = static_cast<uint16_t>(s.hex * 16 + v);
    s.esc = static_cast<uint8_t>(k == 3 ? 0 : s.esc + 1);
    if (k == 3) {
      if (s.low_surrogate_next) {
        s.low_surrogate_next = false;
        complete = true;
        cp = 0x10000 + ((s.cp - 0xD800) << 10) + (s.hex - 0xDC00u);
      } else if (s.hex >= 0xD800 && s.hex <= 0xDBFF) {
        s.low_surrogate_next = true;
        s.cp = s.hex;
      } else {
        complete = true;
        cp = s.hex;
      }
    }
  } else if (s.utf8_need > 0) {
    if (!utf8_continue(c, &s.utf8_need, &s.utf8_lo, &s.utf8_hi)) return false;
    s.cp = (s.cp << 6) | (c & 0x3Fu);
    complete = s.utf8_need == 0;
    cp = s.cp;
  } else if (s.low_surrogate_next) {
    if (c != '\\') return false;
    s.esc = 1;
  } else if (c == '"') {
    closes = true;
  } else if (c == '\\') {
    s.esc = 1;
    new_char = true;
  } else if (c < 0x20) {
    return false;
  } else if (c >= 0x80) {
    if (!utf8_lead(c, &s.utf8_need, &s.utf8_lo, &s.utf8_hi)) return false;
    utf8_begin(c, s.utf8_need, &s.cp, &s.cp_min);
    new_char = true;
  } else {
    new_char = true;
    complete = true;
    cp = c;
  }
  // Raw text that would spell Gemma markup: refused ('<' is written \u003c there).
  if (new_char && c != '\\') {
    if ((s.mark == 1 && c == '|') || (s.mark == 3 && c == '>')) return false;
    if (c == '<') {
      s.mark = 1;
    } else if ((s.mark == 1 || s.mark == 2) && is_mark_letter(c)) {
      s.mark = 2;
    } else if (s.mark == 2 && c == '|') {
      s.mark = 3;
    } else {
      s.mark = 0;
    }
  } else if (c == '\\' && s.esc == 1 && new_char) {
    s.mark = 0;  // an escape's character is not raw text
  }

  if (closes) return close_string(s);
  if (!content_byte(&s, c, new_char)) return false;
  if (complete && s.is_key) s.key_hash = (s.key_hash ^ cp) * 0x100000001B3ull;  // FNV-1a over code points
  if (!pattern_byte(&s, complete, cp)) return false;
  stack_.back() = s;
  ws_run_ = 0;
  return true;
}

bool JsonMatcher::pattern_byte(Frame* s, bool complete, uint32_t cp) const {
  if (s->is_key) return true;
  const Node& n = grammar_->node(s->node);
  if (!n.pattern_form) return true;
  const RegexDfa& d = *n.pattern_form;
  if (complete) {
    const int32_t to = d.step(s->pstate, cp);
    if (to < 0 || !d.viable(to, s->length)) return false;
    s->pstate = to;
    return true;
  }
  CodeRange r[4];
  const int k = partial_code_points(s->utf8_need, s->cp, s->cp_min, s->esc, s->hex, s->low_surrogate_next, r);
  return d.may_take(s->pstate, s->length, r, k);
}

bool JsonMatcher::content_byte(Frame* s, unsigned char c, bool new_char) const {
  const Node& n = grammar_->node(s->node);
  const std::vector<std::string>& list = s->is_key ? n.keys : n.string_enum;
  if (new_char) {
    if (!s->is_key && n.max_length >= 0 && s->length >= n.max_length) return false;
    ++s->length;
  }
  // Every byte between the delimiters narrows the candidates.
  if (!list.empty()) {
    std::bitset<kJsonMaxKeys> next;
    for (size_t i = 0; i < list.size(); ++i) {
      if (s->cand.test(i) && static_cast<size_t>(s->pos) < list[i].size() &&
          static_cast<unsigned char>(list[i][static_cast<size_t>(s->pos)]) == c) {
        next.set(i);
      }
    }
    if (!s->free && next.none()) return false;
    s->cand = next;
  } else if (!s->free) {
    return false;
  }
  ++s->pos;
  return true;
}

bool JsonMatcher::close_string(const Frame& s) {
  const Node& n = grammar_->node(s.node);
  const std::vector<std::string>& list = s.is_key ? n.keys : n.string_enum;
  int exact = -1;
  for (size_t i = 0; i < list.size(); ++i) {
    if (s.cand.test(i) && list[i].size() == static_cast<size_t>(s.pos)) exact = static_cast<int>(i);
  }
  if (!s.free && exact < 0) return false;
  if (!s.is_key && s.length < n.min_length) return false;
  if (!s.is_key && n.pattern_form && !n.pattern_form->accepts(s.pstate)) return false;
  if (!s.is_key && exact >= 0 && stack_.size() >= 2 && stack_[stack_.size() - 2].type == Frame::kObject) {
    // The discriminator of a union of objects (its only key): the object is read from here
    // on under the alternative that lists the value, its discriminator written.
    Frame& obj = stack_[stack_.size() - 2];
    const Node& on = grammar_->node(obj.node);
    if (!on.object_alts.empty()) {
      const int32_t alt = on.object_alts[static_cast<size_t>(on.object_dispatch[static_cast<size_t>(exact)])];
      const Node& an = grammar_->node(alt);
      const auto k = static_cast<size_t>(std::find(an.keys.begin(), an.keys.end(), on.keys[0]) - an.keys.begin());
      obj.node = alt;
      obj.seen.reset();
      obj.seen.set(k);
    }
  }
  if (s.is_key) {
    Frame& obj = stack_[stack_.size() - 2];
    if (exact < 0) {
      // A free key that names a declared one in another spelling ("\u0061" for "a") is it.
      for (size_t i = 0; i < n.key_hashes.size(); ++i) {
        if (n.key_hashes[i] == s.key_hash) exact = static_cast<int>(i);
      }
    }
    if (exact >= 0 && obj.seen.test(static_cast<size_t>(exact))) return false;  // a key written twice
    const int32_t value_node = exact >= 0 ? n.key_nodes[static_cast<size_t>(exact)] : n.extra_node;
    if (grammar_->node(value_node).min_depth > kJsonMaxDepth - depth()) return false;  // no value would fit
    if (exact < 0 && n.min_properties > 0) {
      // An extra key written twice would be one property, short of minProperties.
      const auto begin = key_hashes_.begin() + obj.hash_base;
      if (std::find(begin, key_hashes_.end(), s.key_hash) != key_hashes_.end()) return false;
      key_hashes_.push_back(s.key_hash);
    }
    obj.value_node = value_node;
    ++obj.count;
    if (exact >= 0) obj.seen.set(static_cast<size_t>(exact));
    obj.phase = kObjColon;
    stack_.pop_back();
  } else {
    pop_finished();
  }
  ws_run_ = 0;
  return true;
}

bool JsonMatcher::feed_gemma_string(unsigned char c) {
  Frame s = stack_.back();
  const auto delim = [](uint8_t i) { return static_cast<unsigned char>(kGemmaQuote[i]); };
  if (s.opening) {
    if (c != delim(s.delim)) return false;
    if (++s.delim == kGemmaQuote.size()) {
      s.opening = false;
      s.delim = 0;
    }
  } else if (s.utf8_need > 0) {
    if (!utf8_continue(c, &s.utf8_need, &s.utf8_lo, &s.utf8_hi)) return false;
    if (!content_byte(&s, c, false)) return false;
    s.cp = (s.cp << 6) | (c & 0x3Fu);
    if (!pattern_byte(&s, s.utf8_need == 0, s.cp)) return false;
  } else {
    if (s.delim > 0 && c != delim(s.delim)) {
      // Not the delimiter: the bytes of a partial one were text.
      for (uint8_t i = 0; i < s.delim; ++i) {
        if (!content_byte(&s, delim(i), true) || !pattern_byte(&s, true, delim(i))) return false;
      }
      s.delim = 0;
    }
    if (c == delim(s.delim)) {
      // A (further) byte of the closing delimiter; the whole one closes the string. Taken
      // only if the string may close here, or the bytes may still turn out to be text (a
      // free string with room, or an enum value that goes on with them: "<", "<=", "a<b"):
      // no byte may lead where nothing can follow.
      const Node& n = grammar_->node(s.node);
      const std::vector<std::string>& list = n.string_enum;
      const size_t pos = static_cast<size_t>(s.pos);
      bool exact = s.free;
      for (size_t i = 0; i < list.size() && !exact; ++i) exact = s.cand.test(i) && list[i].size() == pos;
      // A string with a pattern holds no '<' (fill_string_form): the delimiter only closes it.
      const bool may_close =
          exact && s.length >= n.min_length && (!n.pattern_form || n.pattern_form->accepts(s.pstate));
      bool may_be_text = s.free && !n.pattern_form && (n.max_length < 0 || s.length + s.delim + 1 <= n.max_length);
      const std::string_view as_text = kGemmaQuote.substr(0, s.delim + 1u);
      for (size_t i = 0; i < list.size() && !may_be_text && !n.pattern_form; ++i) {
        may_be_text = s.cand.test(i) && list[i].size() >= pos && std::string_view(list[i]).substr(pos).starts_with(as_text);
      }
      if (!may_close && !may_be_text) return false;
      if (++s.delim == kGemmaQuote.size()) return close_string(s);
    } else if (c == 0) {
      return false;
    } else if (c >= 0x80) {
      if (!utf8_lead(c, &s.utf8_need, &s.utf8_lo, &s.utf8_hi)) return false;
      utf8_begin(c, s.utf8_need, &s.cp, &s.cp_min);
      if (!content_byte(&s, c, true) || !pattern_byte(&s, false, 0)) return false;
    } else if (!content_byte(&s, c, true) || !pattern_byte(&s, true, c)) {
      return false;
    }
  }
  stack_.back() = s;
  ws_run_ = 0;
  return true;
}

bool JsonMatcher::feed_bare_key(unsigned char c) {
  Frame s = stack_.back();
  if (c == ':' && s.utf8_need == 0) {
    // The key ends, and its value follows at once.
    if (s.pos == 0 || !close_string(s)) return false;
    Frame& obj = stack_.back();
    obj.phase = kObjValue;
    Frame v;
    v.node = obj.value_node;
    stack_.push_back(v);
    return true;
  }
  s.key_hash = (s.key_hash ^ c) * 0x100000001B3ull;  // FNV-1a over the bytes (a bare key has no escapes)
  if (s.utf8_need > 0) {
    if (!utf8_continue(c, &s.utf8_need, &s.utf8_lo, &s.utf8_hi)) return false;
    if (!content_byte(&s, c, false)) return false;
  } else {
    if (c <= ' ' || std::string_view(":,{}[]\"'<>=").find(static_cast<char>(c)) != std::string_view::npos) return false;
    if (c >= 0x80 && !utf8_lead(c, &s.utf8_need, &s.utf8_lo, &s.utf8_hi)) return false;
    if (!content_byte(&s, c, true)) return false;
  }
  stack_.back() = s;
  ws_run_ = 0;
  return true;
}

bool JsonMatcher::number_complete(const Frame& f) const {
  if (!number_can_end(f.phase)) return false;
  const Node& n = grammar_->node(f.node);
  return !n.num_exact || exact_allowed(n, f.negative, f.value, f.phase == kNFrac ? f.digits : 0);
}

bool JsonMatcher::feed_number(unsigned char c, bool ws) {
  Frame& f = stack_.back();
  const Node& n = grammar_->node(f.node);
  if (n.num_exact) return feed_exact_number(c);
  const bool digit = is_digit(c);
  uint8_t next = 0xFF;
  uint8_t digits = f.digits;
  switch (f.phase) {
    case kNMinus:
      if (digit) {
        next = c == '0' ? kNZero : kNInt;
        digits = 1;
      }
      break;
    case kNZero:
      if (c == '.') next = kNDot;
      if (c == 'e' || c == 'E') next = kNE;
      break;
    case kNInt:
      if (digit && f.digits < kJsonMaxDigits) {
        next = kNInt;
        digits = static_cast<uint8_t>(f.digits + 1);
      }
      if (c == '.') next = kNDot;
      if (c == 'e' || c == 'E') next = kNE;
      break;
    case kNDot:
      if (digit) {
        next = kNFrac;
        digits = 1;
      }
      break;
    case kNFrac:
      if (digit && f.digits < kJsonMaxDigits) {
        next = kNFrac;
        digits = static_cast<uint8_t>(f.digits + 1);
      }
      if (c == 'e' || c == 'E') next = kNE;
      break;
    case kNE:
      if (c == '+' || c == '-') next = kNESign;
      if (digit) {
        next = kNExp;
        digits = 1;
      }
      break;
    case kNESign:
      if (digit) {
        next = kNExp;
        digits = 1;
      }
      break;
    case kNExp:
      if (digit && f.digits < 2) {
        next = kNExp;
        digits = static_cast<uint8_t>(f.digits + 1);
      }
      break;
    default:
      break;
  }
  if (next != 0xFF) {
    f.phase = next;
    f.digits = digits;
    ws_run_ = 0;
    return true;
  }
  if (!number_complete(f)) return false;
  (void)ws;
  return end_and_feed(c);
}

bool JsonMatcher::feed_exact_number(unsigned char c) {
  Frame& f = stack_.back();
  const Node& n = grammar_->node(f.node);
  const bool digit = is_digit(c);
  const int d = digit ? c - '0' : 0;
  // The digit or point taken, when some number of the form still begins with what is read.
  uint8_t next = 0xFF;
  switch (f.phase) {
    case kNMinus:
      // No "-0" integer (parsers read it as a float).
      if (digit && !(n.integer && d == 0) && exact_reachable(n, true, d, 1, false, 0)) next = d == 0 ? kNZero : kNInt;
      break;
    case kNZero:
    case kNInt:
      if (digit && f.phase == kNInt && f.digits < n.int_digits &&
          exact_reachable(n, f.negative, f.value * 10 + d, f.digits + 1, false, 0)) {
        next = kNInt;
      }
      if (c == '.' && n.frac_digits > 0 && exact_reachable(n, f.negative, f.value, f.digits, true, 0)) next = kNDot;
      break;
    case kNDot:
    case kNFrac: {
      const int frac = f.phase == kNFrac ? f.digits : 0;
      if (digit && frac < n.frac_digits && exact_reachable(n, f.negative, f.value * 10 + d, 0, true, frac + 1)) {
        next = kNFrac;
      }
      break;
    }
    default:
      break;
  }
  if (next != 0xFF) {
    if (digit) f.value = f.value * 10 + d;
    if (next == kNFrac) {
      f.digits = f.phase == kNFrac ? static_cast<uint8_t>(f.digits + 1) : 1;
    } else if (digit) {
      f.digits = f.phase == kNMinus ? 1 : static_cast<uint8_t>(f.digits + 1);
    }
    f.phase = next;
    ws_run_ = 0;
    return true;
  }
  if (!number_complete(f)) return false;
  return end_and_feed(c);
}

bool JsonMatcher::feed_literal(unsigned char c, bool ws) {
  Frame& f = stack_.back();
  const auto& lits = grammar_->node(f.node).literals;
  std::bitset<kJsonMaxKeys> next;
  bool exact = false;
  for (size_t i = 0; i < lits.size(); ++i) {
    if (!f.cand.test(i)) continue;
    if (lits[i].size() == static_cast<size_t>(f.pos)) exact = true;
    if (static_cast<size_t>(f.pos) < lits[i].size() && static_cast<unsigned char>(lits[i][static_cast<size_t>(f.pos)]) == c) {
      next.set(i);
    }
  }
  if (next.any()) {
    f.cand = next;
    ++f.pos;
    ws_run_ = 0;
    return true;
  }
  (void)ws;
  return exact && end_and_feed(c);
}

int64_t utf8_chars(std::string_view bytes) {
  int64_t n = 0;
  for (char c : bytes) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool gemma_string_safe(std::string_view bytes) {
  return !bytes.empty() && bytes.find_first_of(std::string_view("<\0", 2)) == std::string_view::npos &&
         is_valid_utf8(bytes);
}

bool json_string_safe(std::string_view bytes) {
  return !bytes.empty() &&
         std::none_of(bytes.begin(), bytes.end(),
                      [](char ch) {
                        const auto c = static_cast<unsigned char>(ch);
                        return c == '"' || c == '\\' || c < 0x20 || c == '<';
                      }) &&
         is_valid_utf8(bytes);
}

}  // namespace gs::text
