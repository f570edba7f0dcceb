// OpenAI response bodies: chat completions (whole and streamed chunks), text completions,
// usage and logprobs, built from a Generation's output.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "server/generation.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace gs::server {

struct ResponseMeta {
  std::string id;       // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

// A fresh id with `prefix` and 24 random base-62 characters.
std::string make_response_id(const char* prefix);
int64_t unix_now();

// JSON text of `j`; invalid UTF-8 inside strings becomes U+FFFD instead of throwing.
std::string dump_json(const nlohmann::json& j);

nlohmann::json usage_json(const GenerationResult& r);
// Extension next to usage: timings and speculative-decoding counts of the request.
nlohmann::json timings_json(const Usage& u);

// logprobs.content entries of a chat response for `tokens`.
nlohmann::json chat_logprobs_json(const text::Tokenizer& tok, const std::vector<GeneratedToken>& tokens);
// Where the next token's text starts in a completion's text, in characters (code points, as
// OpenAI and vLLM count text_offset): the token pieces' bytes go through the same assembly as
// the text shown (an incomplete character is counted once it is complete, an invalid byte
// as its U+FFFD), so streamed and whole responses agree.
struct TextOffsets {
  size_t chars = 0;
  text::Utf8Assembler assembler;
  // Counts `text` (valid UTF-8, e.g. the echoed prompt) as shown before the first token.
  void skip_text(std::string_view text);
  // This token's offset, then moves past its piece.
  size_t next(std::string_view piece);
};

// The legacy completions logprobs object {tokens, token_logprobs, top_logprobs, text_offset}.
nlohmann::json completion_logprobs_json(const text::Tokenizer& tok, const std::vector<GeneratedToken>& tokens,
                                        TextOffsets& offsets);

nlohmann::json chat_completion_json(const ResponseMeta& meta, const GenerationResult& r,
                                    const nlohmann::json& logprobs);
// One chat.completion.chunk with one choice; `finish_reason` "" -> null.
nlohmann::json chat_chunk_json(const ResponseMeta& meta, nlohmann::json delta, const std::string& finish_reason,
                               const nlohmann::json& logprobs);
// The delta object of an OutputDelta.
nlohmann::json chat_delta_json(const OutputDelta& d);
// The closing usage chunk of a stream (choices: []).
nlohmann::json chat_usage_chunk_json(const ResponseMeta& meta, const GenerationResult& r);

nlohmann::json completion_json(const ResponseMeta& meta, const std::string& text, const GenerationResult& r,
                               const nlohmann::json& logprobs);
nlohmann::json completion_chunk_json(const ResponseMeta& meta, const std::string& text,
                                     const std::string& finish_reason, const nlohmann::json& logprobs);
nlohmann::json completion_usage_chunk_json(const ResponseMeta& meta, const GenerationResult& r);

}  // namespace gs::server
