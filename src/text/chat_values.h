// How the Gemma 4 template prints values: Python/Jinja2 semantics (str(), repr(), strip(),
// dictsort, truthiness) and the template's format_argument macro, over nlohmann::json.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gs::text::chat {

// Python str.strip(): removes leading and trailing characters for which str.isspace() is
// true (ASCII whitespace, U+001C..U+001F, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028,
// U+2029, U+202F, U+205F, U+3000). Jinja's `trim` filter.
std::string_view python_strip(std::string_view s);

// ASCII upper-casing (Jinja `upper` on the ASCII type names of JSON schemas).
std::string ascii_upper(std::string_view s);

// Python repr() of a float: shortest round-trip digits, fixed notation for
// 1e-4 <= |x| < 1e16 (always with a fractional part: "2.0"), else "1e+16" / "1.5e-07".
std::string python_float_repr(double x);

// Python str() of a JSON value as json.loads would build it: None, True/False, ints,
// float repr, strings as is at top level, lists/dicts with repr() of their items.
std::string python_str(const nlohmann::json& v);

// json.loads as the template's callers do it: like nlohmann's parse, except that an integer
// beyond int64/uint64 keeps its digits (a binary value of subtype kBigIntegerSubtype holding
// them, which python_str and format_argument print as Python prints the int) instead of
// becoming a double. A discarded value when `text` is not one JSON value.
inline constexpr std::uint64_t kBigIntegerSubtype = 0x6967;  // "gi"
nlohmann::json parse_json_exact(std::string_view text);

// `v` with each big integer of parse_json_exact turned into the double that nlohmann's parse
// reads it as: for readers of numbers (a schema's bounds) that take JSON as nlohmann reads it.
nlohmann::json plain_json(const nlohmann::json& v);

// JSON text of `v` (compact, as nlohmann's dump(): invalid UTF-8 replaced by U+FFFD) in which each
// big integer of parse_json_exact is written as its digits, so that parse_json_exact reads the
// text back to the same value: for a value that came as JSON, not as JSON text (an Anthropic
// tool_use block's input), on its way to the renderer. Recurses once per nesting level: callers
// pass values of bounded depth (request bodies are read at most kMaxJsonDepth deep).
std::string dump_json_exact(const nlohmann::json& v);

// Deepest nesting the renderer accepts in tool schemas and arguments (it recurses).
inline constexpr size_t kMaxJsonNesting = 64;

// Whether `v` nests arrays/objects deeper than `limit` levels (checked without recursion).
bool json_nesting_exceeds(const nlohmann::json& v, size_t limit);

// Jinja truthiness of a value; `v == nullptr` is Undefined (false).
bool truthy(const nlohmann::json* v);

// v[key] for an object, else nullptr (Jinja Undefined).
const nlohmann::json* member(const nlohmann::json* v, std::string_view key);

// Items of an object in Jinja `dictsort` order: keys compared case-insensitively (ASCII
// lower-casing), ties kept in the object's order.
std::vector<std::pair<std::string, const nlohmann::json*>> dictsort(const nlohmann::json& obj);

// The template's format_argument(argument, escape_keys): strings wrapped in <|"|>, booleans
// true/false, mappings {k:v,...} in dictsort order (keys wrapped in <|"|> when escape_keys),
// lists [a,b], anything else as Python str() (numbers, None).
void format_argument(const nlohmann::json& v, bool escape_keys, std::string* out);

// The template's strip_thinking(text): drops every <|channel>...<channel|> span (and an
// unterminated <|channel>... before a later <channel|>), then Python-strips.
std::string strip_thinking(std::string_view text);

}  // namespace gs::text::chat
