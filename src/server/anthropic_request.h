// Anthropic Messages API request bodies (POST /v1/messages and /v1/messages/count_tokens)
// translated into the chat route's typed request, so that they take the chat route's one path
// (render, tokenize, engine, output parser). Every error names the field at fault in the
// client's own terms ("messages[1].content[0].tool_use_id ..."): 400 invalid_request_error.
// Decision 0031.
#pragma once

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "server/api_request.h"
#include "text/json_grammar_cache.h"

namespace gs::server {

enum class MessagesRoute {
  kCreate,       // POST /v1/messages: max_tokens required, sampling and streaming read
  kCountTokens,  // POST /v1/messages/count_tokens: only what the prompt is made of
};

// The chat request an Anthropic Messages body stands for:
// - `system` (a string, or an array of text blocks) is a leading system message;
// - `messages` alternate "user" and "assistant" (consecutive turns of one role are kept as
//   they are); content is a string or an array of blocks: text; tool_use (assistant: a call
//   with its id, name and `input` object); tool_result (user: one tool message per block,
//   before the turn's text, answering a tool_use of the assistant message just before it,
//   by `tool_use_id`; its content a string or text blocks; `is_error` is not rendered);
//   thinking (assistant: its reasoning; `signature` ignored); redacted_thinking (dropped).
//   Images and documents are refused (this server reads text only), and so is any other
//   block type;
// - `tools` [{name, description?, input_schema}] (a server tool, which has a `type` other
//   than "custom", is refused); `tool_choice` {type: auto | any | tool (+ name) | none,
//   disable_parallel_tool_use?} is auto, required, named or none;
// - `thinking` {type: "enabled", budget_tokens?} turns thinking on with that reasoning
//   budget, {type: "adaptive"} on without one, {type: "disabled"} off; absent: the server's
//   --reasoning default;
// - `output_config.format` (or the beta's `output_format`) {type: "json_schema", schema} is
//   the JSON constraint of the text (anthropic_output.h); `output_config.effort` a hint;
// - kCreate only: `max_tokens` (required, >= 1), `stop_sequences`, `temperature`, `top_p`,
//   `top_k`, `stream`;
// - `model`, `metadata` and fields this server does not know are not used.
// `grammar_cache` (null: none): the server's compiled grammars, through which the output
// schema compiles (server/output_schema.h; decision 0072).
// Errors: kInvalidArgument naming the field.
Result<ChatCompletionRequest> parse_messages_request(const nlohmann::json& body, const RequestDefaults& defaults,
                                                     MessagesRoute route,
                                                     text::JsonGrammarCache* grammar_cache = nullptr);

}  // namespace gs::server
