// Safe JSON input: a body parser that rejects deep nesting before nlohmann sees it, and
// typed field readers whose errors name the field ("messages[2].content: ...").
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace gs::server {

inline constexpr int kMaxJsonDepth = 64;
// Objects, arrays and strings (keys included) in one body: nlohmann allocates each on the
// heap (some 100 bytes for "{}"), so 8 MB of them took 290 MB to parse. Numbers, true,
// false and null are held inline and not counted.
inline constexpr size_t kMaxJsonHeapValues = size_t{1} << 18;

// Parses a request body (or a JSON object nested in one as a string: `what` names it in
// the errors). Errors (kInvalidArgument): empty text, nesting deeper than `max_depth`
// arrays/objects, more than kMaxJsonHeapValues objects, arrays and strings, malformed JSON
// (anything but one JSON value and whitespace: a NUL byte or other text after it too),
// invalid UTF-8 in a string, a top level that is not an object.
// An integer written past 64 bits is a double (nlohmann's reading) outside int64's range: one
// that rounds to -2^63 is made the next double below, so that no integer field takes it for
// -2^63 (decision 0053).
// In a request body (`what` left as it is), a top-level member written with a fraction or an
// exponent that an integer field could take but a double does not hold exactly (2^53 <=
// |value| < 2^64 and not the double it rounds to: `9007199254740993.0`, `9007199254740993.5`)
// is refused naming its field: "seed: the number 9007199254740993.0 is not held exactly (a
// double rounds it to 9007199254740992); ..." (decision 0055). Whole floats a double holds
// (`1e16`, `9.2e18`), nested numbers (messages, tools, schemas, call inputs) and JSON texts
// nested as strings are read as before.
// A number no double holds (1e400, a 400-digit integer) is named with its byte offset and the
// field it is the value of: "max_tokens: number out of range: 1e400 ... (byte offset 14 of the
// request body)", the field first for a request body (the error's param).
Result<nlohmann::json> parse_json_object(std::string_view body, int max_depth = kMaxJsonDepth,
                                         std::string_view what = "the request body");

// Whether `obj` holds `key` with a value other than null (null is absent, as the field
// readers below take it).
bool present(const nlohmann::json& obj, const char* key);

// Field readers: a missing key or null leaves *out unset and returns OK; a value of the
// wrong type or outside [lo, hi] is kInvalidArgument naming `path`.`key`.
Status read_int(const nlohmann::json& obj, std::string_view path, const char* key, int64_t lo, int64_t hi,
                std::optional<int64_t>* out);
Status read_number(const nlohmann::json& obj, std::string_view path, const char* key, double lo, double hi,
                   std::optional<double>* out);
Status read_bool(const nlohmann::json& obj, std::string_view path, const char* key, std::optional<bool>* out);
Status read_string(const nlohmann::json& obj, std::string_view path, const char* key,
                   std::optional<std::string>* out);

// One element of an array of token ids: an integer in [0, id_end). Errors (kInvalidArgument)
// name `where` ("tokens[3] must be a token id (integer), got 1.5", "tokens[3]: token id 7 is
// outside the vocabulary [0, 4)"), showing the value as sent (an id above INT64_MAX too).
Result<int32_t> read_token_id(const nlohmann::json& v, std::string_view where, int64_t id_end);

// "path.key" (or "key" when path is empty).
std::string field_name(std::string_view path, std::string_view key);
// A short name of the JSON type of `v` for messages: "string", "number", "object", ...
const char* json_type_name(const nlohmann::json& v);

}  // namespace gs::server
