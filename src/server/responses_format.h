// OpenAI Responses API output built from a Generation's output: the response object (output
// items, status, usage, the echoed request fields) and the server-sent event sequence of a
// stream. Decision 0032.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/generation.h"
#include "server/openai_format.h"

namespace gs::server {

// usage: {input_tokens, input_tokens_details: {cached_tokens}, output_tokens,
// output_tokens_details: {reasoning_tokens}, total_tokens}.
nlohmann::json responses_usage_json(const GenerationResult& r);

// "incomplete" when max_output_tokens or the context ended the output (finish "length"),
// else "completed".
const char* responses_status(const GenerationResult& r);

// The output items of a whole response, in this order: a reasoning item {type, id "rs_...",
// summary: [], content: [{type: "reasoning_text", text}]} when the model thought; a message
// item {type, id "msg_...", status, role: "assistant", content: [{type: "output_text", text,
// annotations: []}]} when it wrote text; a function_call item {type, id "fc_...", call_id,
// name, arguments, status} per call. Item status is "completed", or "incomplete" for the
// last item of an incomplete response.
nlohmann::json responses_output_json(const GenerationResult& r);

// The output_text convenience field: the text of the output's message items, joined.
std::string responses_output_text(const nlohmann::json& output);

// A response object {id, object: "response", created_at, status, error, incomplete_details,
// model, output, output_text, usage, ...echo}. `status` "in_progress" (usage null and no
// output_text, for the first events of a stream), "completed", "incomplete" (incomplete_details.reason
// "max_output_tokens") or "failed" (`error` {code, message}). `echo` holds the request fields
// the response repeats (ResponsesRequest::echo).
nlohmann::json response_object_json(const ResponseMeta& meta, const nlohmann::json& echo, std::string_view status,
                                    nlohmann::json output, const GenerationResult* r,
                                    const nlohmann::json& error = nullptr);

// The whole response of a finished generation.
nlohmann::json responses_response_json(const ResponseMeta& meta, const nlohmann::json& echo,
                                       const GenerationResult& r);

// One server-sent event: "event: TYPE\ndata: JSON\n\n" (TYPE is data's "type").
std::string responses_sse_event(const nlohmann::json& data);

// A stream's events: response.created and response.in_progress; then per output item
// response.output_item.added, its events, response.output_item.done: reasoning
// (content_part.added with a reasoning_text part, reasoning_text.delta*, reasoning_text.done,
// content_part.done), message (content_part.added with an output_text part,
// output_text.delta*, output_text.done, content_part.done), function_call
// (function_call_arguments.delta*, function_call_arguments.done); then response.completed or
// response.incomplete with the whole response (the streamed items, the same ids). Items
// follow the output deltas in order: a delta of another kind than the open item's closes it
// and opens the next; each call is its own item. Every event carries `sequence_number`,
// counting from 0. Each method returns the SSE text to write ("" when nothing is due).
class ResponsesStream {
 public:
  ResponsesStream(ResponseMeta meta, nlohmann::json echo) : meta_(std::move(meta)), echo_(std::move(echo)) {}

  std::string start();
  std::string delta(const OutputDelta& d);
  // Closes the open item; response.completed or response.incomplete.
  std::string finish(const GenerationResult& r);
  // response.failed with `e` as the response's error (nothing follows it).
  std::string fail(const ApiError& e);

 private:
  enum class Item { kNone, kReasoning, kMessage, kFunctionCall };
  std::string event(nlohmann::json data);
  std::string open(Item kind, const OutputDelta& d);
  std::string close(const char* status);
  nlohmann::json item_json(const char* status) const;

  ResponseMeta meta_;
  nlohmann::json echo_;
  int64_t sequence_ = 0;
  nlohmann::json done_items_ = nlohmann::json::array();
  Item open_ = Item::kNone;
  std::string item_id_;
  std::string text_;     // reasoning, message text or arguments of the open item
  std::string call_id_;  // kFunctionCall
  std::string name_;     // kFunctionCall
};

}  // namespace gs::server
