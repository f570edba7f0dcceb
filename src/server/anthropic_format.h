// Anthropic Messages API responses built from a Generation's output: the message object,
// its stop reason and usage, the server-sent event sequence of a stream, and error bodies in
// Anthropic's shape. Decision 0031.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/engine.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "server/openai_format.h"

namespace gs::server {

// Anthropic's stop_reason and stop_sequence for a finished generation: "max_tokens" when
// max_tokens or the context ended it (a call cut there included), else "tool_use" when the
// answer called a tool, "stop_sequence" (with the string) when one of stop_sequences ended
// it, else "end_turn"; sequence "" -> null.
struct AnthropicStop {
  std::string reason;
  std::string sequence;
};
AnthropicStop anthropic_stop(const GenerationResult& r);

// usage of a finished message: input_tokens are the prompt tokens not reused from the cache
// (Anthropic's meaning), cache_read_input_tokens the reused ones (their sum is the prompt),
// cache_creation_input_tokens 0, output_tokens the generated tokens.
nlohmann::json anthropic_usage_json(const Usage& u);

// A tool_use block's id for a parser call id: "call_X" becomes "toolu_X" (Anthropic's
// prefix); any other id is kept.
std::string anthropic_tool_use_id(std::string_view call_id);

// The message object of a whole response: {id, type:"message", role:"assistant", model,
// content: [thinking (signature ""), text, tool_use...] (each only when there is one),
// stop_reason, stop_sequence, usage}. A call's input is its arguments object ({} should
// the arguments not be a JSON object, which the output parser never gives); an integer in it
// beyond 64 bits is text::chat::parse_json_exact's big-integer value, which nlohmann's dump
// does not write as a number: send anthropic_message_text.
nlohmann::json anthropic_message_json(const ResponseMeta& meta, const GenerationResult& r);
// That message as JSON text, as dump_json writes it except that a call input's integers beyond
// 64 bits are the digits the model wrote (the stream's input_json_delta text and the chat
// route's arguments string have them too; nlohmann read them as doubles; decision 0056).
std::string anthropic_message_text(const ResponseMeta& meta, const GenerationResult& r);

// Anthropic's error type for an HTTP status: 400 and other 4xx invalid_request_error, 401
// authentication_error, 403 permission_error, 404 not_found_error, 413 request_too_large,
// 429 rate_limit_error, 503 and 529 overloaded_error, other 5xx api_error.
const char* anthropic_error_type(int http_status);
// {"type":"error","error":{"type","message"}} for `e` (its status chooses the type).
nlohmann::json anthropic_error_json(const ApiError& e);
// The same as JSON text (invalid UTF-8 quoted from the input becomes U+FFFD).
std::string anthropic_error_body(const ApiError& e);

// One server-sent event: "event: NAME\ndata: JSON\n\n".
std::string anthropic_sse_event(std::string_view name, const nlohmann::json& data);

// A stream's events, in Anthropic's order: message_start (and a ping), then for each block
// content_block_start, its deltas (text_delta, thinking_delta, input_json_delta) and
// content_block_stop, then message_delta (stop_reason, stop_sequence, usage) and
// message_stop. Blocks follow the output deltas in order: a delta of another kind than the
// open block's closes it and opens the next, at the next index; each call is its own
// tool_use block. Each method returns the SSE text to write ("" when nothing is due).
class AnthropicStream {
 public:
  explicit AnthropicStream(ResponseMeta meta) : meta_(std::move(meta)) {}

  // message_start with the prompt's size as input_tokens (the cache's share is known only
  // at the end: message_delta's usage says it), then a ping.
  std::string start(int32_t n_prompt_tokens);
  std::string delta(const OutputDelta& d);
  // Closes the open block; message_delta and message_stop.
  std::string finish(const GenerationResult& r);
  // An error event after the stream has begun (nothing follows it).
  static std::string error(const ApiError& e);
  // A keep-alive: event ping.
  static std::string ping();

 private:
  enum class Block { kNone, kText, kThinking, kToolUse };
  std::string open(Block kind, nlohmann::json content_block);
  std::string close();

  ResponseMeta meta_;
  Block block_ = Block::kNone;
  int index_ = -1;       // the open (or last) block's index
  int tool_index_ = -1;  // the open tool_use block's call index
};

}  // namespace gs::server
