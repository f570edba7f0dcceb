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

// How a chat answer spells its calls: `tool_calls` (finish_reason "tool_calls"), or, for a
// request in the legacy `functions` form, `function_call` (the first call; finish_reason
// "function_call"), as OpenAI answers one (decision 0030).
enum class ToolCallForm { kToolCalls, kFunctionCall };

// What a response's usage reports, over all its choices.
struct ResponseUsage {
  Usage usage;
  int32_t reasoning_tokens = 0;
};
// The usage of a response's choices (one, or OpenAI's n): the prompt counted once, its
// cached tokens the fewest any choice reused; completion and reasoning tokens and drafts
// summed over the choices; queue, prefill and decode times the longest of any choice.
// `results` is not empty.
ResponseUsage combine_usage(const std::vector<const GenerationResult*>& results);

nlohmann::json usage_json(const ResponseUsage& u);
// The usage so far of a streamed choice (vLLM's continuous_usage_stats): prompt, completion
// and total tokens.
nlohmann::json running_usage_json(int32_t prompt_tokens, int32_t completion_tokens);
// Extension next to usage: timings and speculative-decoding counts of the request, under
// llama-server's names (prompt_n: the prompt tokens prefilled, the cached prefix left out;
// predicted_n: the completion tokens; *_per_second: their rates).
nlohmann::json timings_json(const Usage& u);

// logprobs.content entries of a chat response for `tokens`; a cut token (ShownToken::shown_bytes)
// spells the kept bytes of its piece (`token` and `bytes`).
nlohmann::json chat_logprobs_json(const text::Tokenizer& tok, const std::vector<ShownToken>& tokens);
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

// The legacy completions logprobs object {tokens, token_logprobs, top_logprobs, text_offset}; a
// cut token (ShownToken::shown_bytes) is spelled, and moves the offsets on, by its kept bytes.
nlohmann::json completion_logprobs_json(const text::Tokenizer& tok, const std::vector<ShownToken>& tokens,
                                        TextOffsets& offsets);

// The finish_reason of a chat choice: the result's, with "tool_calls" spelled
// "function_call" in the legacy form.
std::string chat_finish_reason(const GenerationResult& r, ToolCallForm form);
// One entry of a chat.completion's `choices`: {index, message, logprobs, finish_reason}.
nlohmann::json chat_choice_json(int index, const GenerationResult& r, const nlohmann::json& logprobs,
                                ToolCallForm form);
// A chat.completion with `choices` (chat_choice_json entries, index order) and their usage.
nlohmann::json chat_completion_json(const ResponseMeta& meta, nlohmann::json choices, const ResponseUsage& usage);
// One chat.completion.chunk with the choice `index`; `finish_reason` "" -> null.
nlohmann::json chat_chunk_json(const ResponseMeta& meta, int index, nlohmann::json delta,
                               const std::string& finish_reason, const nlohmann::json& logprobs);
// The delta object of an OutputDelta: a call's pieces as `tool_calls` entries, or in the
// legacy form as `function_call` ({name, arguments: ""}, then {arguments} pieces).
nlohmann::json chat_delta_json(const OutputDelta& d, ToolCallForm form);
// The closing usage chunk of a stream (choices: []).
nlohmann::json chat_usage_chunk_json(const ResponseMeta& meta, const ResponseUsage& usage);

// One entry of a text_completion's `choices`: {index, text, logprobs, finish_reason}.
nlohmann::json completion_choice_json(int index, const std::string& text, const GenerationResult& r,
                                      const nlohmann::json& logprobs);
nlohmann::json completion_json(const ResponseMeta& meta, nlohmann::json choices, const ResponseUsage& usage);
nlohmann::json completion_chunk_json(const ResponseMeta& meta, int index, const std::string& text,
                                     const std::string& finish_reason, const nlohmann::json& logprobs);
nlohmann::json completion_usage_chunk_json(const ResponseMeta& meta, const ResponseUsage& usage);

}  // namespace gs::server
