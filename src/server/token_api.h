// llama-server's tokenizer routes, POST /tokenize and POST /detokenize: their bodies parsed
// and validated to typed values (every error names the field, 400 invalid_request_error),
// and their responses written as JSON text.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "text/tokenizer.h"

namespace gs::server {

struct TokenizeRequest {
  std::string content;
  bool add_special = false;   // BOS first, as the tokenizer does for a prompt
  bool parse_special = true;  // control-token text ("<|turn>", "<bos>") becomes its token (llama-server's default)
  bool with_pieces = false;   // each id with its piece
};

// {"content": string, "add_special"?: bool, "parse_special"?: bool, "with_pieces"?: bool}.
// Errors (kInvalidArgument): content missing or not a string, a flag not a boolean.
Result<TokenizeRequest> parse_tokenize_request(const nlohmann::json& body);

struct DetokenizeRequest {
  std::vector<int32_t> tokens;
};

// {"tokens": [ids]}. Errors (kInvalidArgument, naming "tokens[i]" where an element is at
// fault): tokens missing or not an array, an element that is not an integer (5.0 included)
// or lies outside [0, n_vocab).
Result<DetokenizeRequest> parse_detokenize_request(const nlohmann::json& body, int32_t n_vocab);

// {"tokens":[ids]}, or with pieces {"tokens":[{"id":n,"piece":"text"},...]}: each piece as
// llama-server gives it (control tokens as their text), and a piece that is not valid UTF-8
// on its own (a byte token, half a character) as the array of its byte values. Written
// directly, in time linear in the ids: no JSON tree of a million objects. `ids` must be
// valid ids of `tok`.
std::string tokenize_response_json(const text::Tokenizer& tok, std::span<const int32_t> ids, bool with_pieces);

// The entries of ids [begin, end) of that array appended to `out`, each after a ',' except
// the array's first: a large answer is written in parts with these between "{\"tokens\":["
// and "]}", the same bytes as tokenize_response_json.
void append_tokenize_entries(const text::Tokenizer& tok, std::span<const int32_t> ids, size_t begin, size_t end,
                             bool with_pieces, std::string* out);

// {"content": text}: the pieces of `ids` joined (control tokens as their text, as
// llama-server's detokenize), byte tokens assembled into UTF-8, a sequence that stays
// invalid as U+FFFD, so the JSON is always valid. `ids` must be valid ids of `tok`.
std::string detokenize_response_json(const text::Tokenizer& tok, std::span<const int32_t> ids);

}  // namespace gs::server
