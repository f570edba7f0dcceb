// The tokenizer routes, POST /tokenize and POST /detokenize, in llama-server's and vLLM's
// forms: their bodies parsed and validated to typed values (every error names the field, 400
// invalid_request_error), and their responses written as JSON text.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "text/tokenizer.h"

namespace gs::server {

// Whose body POST /tokenize got: llama-server's {"content"}, or vLLM's {"prompt"} (text) or
// {"messages"} (a chat, rendered as the chat route renders it).
enum class TokenizeForm { kLlamaServer, kVllmPrompt, kVllmMessages };

struct TokenizeRequest {
  TokenizeForm form = TokenizeForm::kLlamaServer;
  std::string content;        // llama-server's content or vLLM's prompt (kVllmMessages: empty)
  bool add_special = false;   // BOS first (vLLM's add_special_tokens; messages: one more than the chat route's)
  bool parse_special = true;  // control-token text ("<|turn>", "<bos>") becomes its token (llama-server's default)
  bool with_pieces = false;   // llama-server: each id with its piece
  bool token_strs = false;    // vLLM's return_token_strs: each id's vocabulary string
};

// llama-server's {"content": string, "add_special"?: bool (false), "parse_special"?: bool
// (true), "with_pieces"?: bool (false)}, or vLLM's {"prompt": string, "add_special_tokens"?:
// bool (true), "return_token_strs"?: bool|null (false)} or {"messages": [...],
// "add_special_tokens"?: bool (false), "return_token_strs"?, and the chat fields the route
// reads with parse_chat_request}. Errors (kInvalidArgument, naming the field): none or several
// of content, prompt and messages; content or prompt not a string; a flag not a boolean.
// The messages themselves are the route's to read.
Result<TokenizeRequest> parse_tokenize_request(const nlohmann::json& body);

struct DetokenizeRequest {
  std::vector<int32_t> tokens;
};

// {"tokens": [ids]}. Errors (kInvalidArgument, naming "tokens[i]" where an element is at
// fault): tokens missing or not an array, an element that is not an integer (5.0 included)
// or lies outside [0, n_vocab).
Result<DetokenizeRequest> parse_detokenize_request(const nlohmann::json& body, int32_t n_vocab);

// What a /tokenize answer holds besides the ids.
struct TokenizeAnswer {
  bool with_pieces = false;  // llama-server: {"id":n,"piece":"text"} entries instead of ids
  bool vllm = false;         // vLLM's keys: count, max_model_len, token_strs
  bool token_strs = false;   // vLLM: token_strs as the ids' vocabulary strings, else null
  int64_t max_model_len = 0;  // vLLM: the context a request may fill (tokens)
};

// A /tokenize answer's JSON, written in parts so that a large one is never built whole (its
// JSON is 7-25 times the request body) and in time linear in the ids: no JSON tree of a million
// objects. llama-server's {"tokens":[ids]}, or with pieces {"tokens":[{"id":n,"piece":"text"},
// ...]}: each piece as llama-server gives it (control tokens as their text), and a piece that is
// not valid UTF-8 on its own (a byte token, half a character) as the array of its byte values.
// vLLM's adds "token_strs" (the vocabulary strings, or null), "count" and "max_model_len".
// The ids must be valid ids of the tokenizer passed to next().
class TokenizeAnswerWriter {
 public:
  TokenizeAnswerWriter(std::vector<int32_t> ids, TokenizeAnswer answer);
  bool done() const { return phase_ == Phase::kDone; }
  // Appends the next part, with at most max_entries array entries (>= 1), to `out`.
  void next(const text::Tokenizer& tok, size_t max_entries, std::string* out);

 private:
  enum class Phase { kIds, kStrings, kDone };
  void close_ids(std::string* out);
  std::vector<int32_t> ids_;
  TokenizeAnswer answer_;
  Phase phase_ = Phase::kIds;
  size_t next_ = 0;
  bool opened_ = false;
};

// The whole answer of TokenizeAnswerWriter with llama-server's keys, in one string.
std::string tokenize_response_json(const text::Tokenizer& tok, std::span<const int32_t> ids, bool with_pieces);

// {"content": text, "prompt": text} (llama-server's key and vLLM's): the pieces of `ids`
// joined (control tokens as their text, as llama-server's detokenize), byte tokens assembled
// into UTF-8, a sequence that stays invalid as U+FFFD, so the JSON is always valid. `ids` must
// be valid ids of `tok`.
std::string detokenize_response_json(const text::Tokenizer& tok, std::span<const int32_t> ids);

}  // namespace gs::server
