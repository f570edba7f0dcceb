// Integers beyond 64 bits in a request's tool JSON (declarations, Anthropic's past calls), kept as
// the client wrote them.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

namespace gs::server {

// nlohmann reads an integer literal beyond int64/uint64 as a double, so the Gemma 4 tool
// declaration printed 18446744073709551616 in a tool's schema as 1.8446744073709552e+19,
// where the template's json.loads keeps the int and prints its digits. Where `body` (parsed
// from `text` by parse_json_object) holds, under "tools" or "functions", a whole double of
// magnitude 2^63 or more (what such a literal gives, and what a float literal such as 1e19 gives
// too), those keys' values are replaced by text::chat::parse_json_exact's reading of `text`,
// in which an integer literal beyond 64 bits holds its digits (a float literal stays a double).
// Readers of the schema's numbers take text::chat::plain_json of it.
// The same for the input of each tool_use block in `messages` (an Anthropic history's past
// call, an object where OpenAI's arguments are a string that the renderer reads exactly) that
// holds such a double: that input alone is replaced, and the Messages adapter writes it as text
// with text::chat::dump_json_exact. Nothing changes otherwise.
void keep_exact_tool_integers(std::string_view text, nlohmann::json* body);

}  // namespace gs::server
