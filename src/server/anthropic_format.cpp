// Builders of Anthropic Messages API response JSON and stream events.
#include "server/anthropic_format.h"

#include <algorithm>

#include "text/chat_values.h"

namespace gs::server {

using nlohmann::json;

namespace {

json null_if_empty(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// A call's arguments text as the tool_use input object: integers beyond 64 bits kept as their
// digits (text::chat::parse_json_exact), which anthropic_message_text writes back as written.
json tool_input(const std::string& arguments_json) {
  json input = text::chat::parse_json_exact(arguments_json);
  return input.is_object() ? input : json::object();
}

}  // namespace

std::string anthropic_message_text(const ResponseMeta& meta, const GenerationResult& r) {
  return text::chat::dump_json_exact(anthropic_message_json(meta, r));
}

AnthropicStop anthropic_stop(const GenerationResult& r) {
  // A call cut by max_tokens is max_tokens, as Anthropic has it (its input is repaired).
  if (r.finish_reason == "length") return {"max_tokens", ""};
  if (r.finish_reason == "tool_calls" || !r.tool_calls.empty()) return {"tool_use", ""};
  if (!r.stop_sequence.empty()) return {"stop_sequence", r.stop_sequence};
  return {"end_turn", ""};
}

json anthropic_usage_json(const Usage& u) {
  const int32_t cached = std::clamp(u.cached_tokens, 0, u.prompt_tokens);
  return json{{"input_tokens", u.prompt_tokens - cached},
              {"cache_creation_input_tokens", 0},
              {"cache_read_input_tokens", cached},
              {"output_tokens", u.completion_tokens}};
}

std::string anthropic_tool_use_id(std::string_view call_id) {
  constexpr std::string_view kCall = "call_";
  if (call_id.substr(0, kCall.size()) == kCall) return "toolu_" + std::string(call_id.substr(kCall.size()));
  return std::string(call_id);
}

json anthropic_message_json(const ResponseMeta& meta, const GenerationResult& r) {
  json content = json::array();
  if (!r.reasoning_content.empty()) {
    content.push_back({{"type", "thinking"}, {"thinking", r.reasoning_content}, {"signature", ""}});
  }
  if (!r.content.empty()) content.push_back({{"type", "text"}, {"text", r.content}});
  for (const auto& c : r.tool_calls) {
    content.push_back({{"type", "tool_use"},
                       {"id", anthropic_tool_use_id(c.id)},
                       {"name", c.name},
                       {"input", tool_input(c.arguments_json)}});
  }
  const AnthropicStop stop = anthropic_stop(r);
  return json{{"id", meta.id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", meta.model},
              {"content", std::move(content)},
              {"stop_reason", stop.reason},
              {"stop_sequence", null_if_empty(stop.sequence)},
              {"usage", anthropic_usage_json(r.usage)}};
}

const char* anthropic_error_type(int http_status) {
  switch (http_status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503:
    case 529: return "overloaded_error";
    default: return http_status >= 500 ? "api_error" : "invalid_request_error";
  }
}

json anthropic_error_json(const ApiError& e) {
  return json{{"type", "error"}, {"error", {{"type", anthropic_error_type(e.http_status)}, {"message", e.message}}}};
}

std::string anthropic_error_body(const ApiError& e) { return dump_json(anthropic_error_json(e)); }

std::string anthropic_sse_event(std::string_view name, const json& data) {
  std::string out = "event: ";
  out += name;
  out += "\ndata: ";
  out += dump_json(data);
  out += "\n\n";
  return out;
}

std::string AnthropicStream::start(int32_t n_prompt_tokens) {
  json message{{"id", meta_.id},
               {"type", "message"},
               {"role", "assistant"},
               {"model", meta_.model},
               {"content", json::array()},
               {"stop_reason", nullptr},
               {"stop_sequence", nullptr},
               {"usage", {{"input_tokens", n_prompt_tokens}, {"output_tokens", 0}}}};
  return anthropic_sse_event("message_start", {{"type", "message_start"}, {"message", std::move(message)}}) + ping();
}

std::string AnthropicStream::open(Block kind, json content_block) {
  std::string out = close();
  block_ = kind;
  ++index_;
  out += anthropic_sse_event("content_block_start",
                             {{"type", "content_block_start"}, {"index", index_}, {"content_block", std::move(content_block)}});
  return out;
}

std::string AnthropicStream::close() {
  if (block_ == Block::kNone) return {};
  block_ = Block::kNone;
  tool_index_ = -1;
  return anthropic_sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
}

std::string AnthropicStream::delta(const OutputDelta& d) {
  std::string out;
  json delta;
  switch (d.kind) {
    case OutputDelta::Kind::kContent:
      if (d.text.empty()) return {};
      if (block_ != Block::kText) out += open(Block::kText, {{"type", "text"}, {"text", ""}});
      delta = {{"type", "text_delta"}, {"text", d.text}};
      break;
    case OutputDelta::Kind::kReasoning:
      if (d.text.empty()) return {};
      if (block_ != Block::kThinking) {
        out += open(Block::kThinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
      }
      delta = {{"type", "thinking_delta"}, {"thinking", d.text}};
      break;
    case OutputDelta::Kind::kToolCallBegin:
      out += open(Block::kToolUse, {{"type", "tool_use"},
                                    {"id", anthropic_tool_use_id(d.tool_id)},
                                    {"name", d.tool_name},
                                    {"input", json::object()}});
      tool_index_ = d.tool_index;
      return out;
    case OutputDelta::Kind::kToolCallArgs:
      // The arguments of the open call only (the parser sends a call's arguments after its
      // begin and before the next call's).
      if (d.text.empty() || block_ != Block::kToolUse || d.tool_index != tool_index_) return {};
      delta = {{"type", "input_json_delta"}, {"partial_json", d.text}};
      break;
  }
  out += anthropic_sse_event("content_block_delta",
                             {{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(delta)}});
  return out;
}

std::string AnthropicStream::finish(const GenerationResult& r) {
  std::string out = close();
  const AnthropicStop stop = anthropic_stop(r);
  out += anthropic_sse_event("message_delta",
                             {{"type", "message_delta"},
                              {"delta", {{"stop_reason", stop.reason}, {"stop_sequence", null_if_empty(stop.sequence)}}},
                              {"usage", anthropic_usage_json(r.usage)}});
  out += anthropic_sse_event("message_stop", {{"type", "message_stop"}});
  return out;
}

std::string AnthropicStream::error(const ApiError& e) { return anthropic_sse_event("error", anthropic_error_json(e)); }

std::string AnthropicStream::ping() { return anthropic_sse_event("ping", {{"type", "ping"}}); }

}  // namespace gs::server
