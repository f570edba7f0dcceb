// Shared pieces of the Gemma 4 renderers.
#include "text/chat_render_parts.h"

#include "text/chat_values.h"

namespace gs::text::chat {

using nlohmann::json;

std::string content_text(const ChatMessage& m) {
  if (m.content_parts.empty()) return m.content;
  std::string s;
  for (const auto& p : m.content_parts) {
    if (p.type == ContentPartType::kText) s += p.text;
  }
  return s;
}

void append_tool_response(std::string_view name, std::string_view body, PromptBuilder* out) {
  out->mark(markup::kToolResponseOpen);
  out->append("response:");
  out->append(name);
  out->append("{value:");
  out->mark(markup::kQuote);
  out->append(body);
  out->mark(markup::kQuote);
  out->append("}");
  out->mark(markup::kToolResponseClose);
}

Status append_tool_call(const ChatToolCall& call, size_t msg_index, PromptBuilder* out) {
  json args = json::object();
  if (!python_strip(call.arguments_json).empty()) {
    args = parse_json_exact(call.arguments_json);  // integers beyond 64 bits as json.loads keeps them
    if (args.is_discarded()) {
      return make_status(StatusCode::kInvalidArgument,
                         "messages[{}]: the arguments of tool call \"{}\" are not valid JSON", msg_index, call.name);
    }
    if (json_nesting_exceeds(args, kMaxJsonNesting)) {
      return make_status(StatusCode::kInvalidArgument,
                         "messages[{}]: the arguments of tool call \"{}\" nest deeper than {} levels", msg_index,
                         call.name, kMaxJsonNesting);
    }
    if (!args.is_object()) {
      return make_status(StatusCode::kInvalidArgument,
                         "messages[{}]: the arguments of tool call \"{}\" are not a JSON object", msg_index,
                         call.name);
    }
  }
  out->mark(markup::kToolCallOpen);
  out->append("call:");
  out->append(call.name);
  out->append("{");
  bool first = true;
  for (const auto& [key, value] : dictsort(args)) {
    if (!first) out->append(",");
    first = false;
    std::string item = key;
    item.push_back(':');
    format_argument(*value, /*escape_keys=*/false, &item);
    out->append(item);
  }
  out->append("}");
  out->mark(markup::kToolCallClose);
  return Status::ok_status();
}

size_t leading_system_count(std::span<const ChatMessage> messages, bool merge) {
  if (messages.empty() || !is_system_like(messages[0].role)) return 0;
  size_t n = 1;
  if (merge) {
    while (n < messages.size() && is_system_like(messages[n].role)) ++n;
  }
  return n;
}

void append_system_turn(std::span<const ChatMessage> system, std::span<const ChatTool> tools,
                        const ChatRenderOptions& options, PromptBuilder* out, PrevType* prev) {
  if (!options.enable_thinking && tools.empty() && system.empty()) return;
  out->mark(markup::kTurnOpen);
  *out += "system\n";
  if (options.enable_thinking) {
    out->mark(markup::kThink);
    *out += "\n";
    *prev = PrevType::kThink;
  }
  std::string system_text;
  for (const ChatMessage& m : system) {
    const std::string text = content_text(m);
    const std::string_view stripped = python_strip(text);
    if (system.size() > 1 && stripped.empty()) continue;
    if (!system_text.empty()) system_text += "\n\n";
    system_text += stripped;
  }
  *out += system_text;
  for (const ChatTool& tool : tools) {
    out->mark(markup::kToolOpen);
    *out += python_strip(render_tool_declaration(tool, options.variant));
    out->mark(markup::kToolClose);
  }
  if (!tools.empty()) *prev = PrevType::kTool;
  out->mark(markup::kTurnClose);
  *out += "\n";
}

void append_content(const ChatMessage& m, bool model, PromptBuilder* out, PrevType* prev) {
  if (m.content_parts.empty()) {
    *out += model ? strip_thinking(m.content) : std::string(python_strip(m.content));
    return;
  }
  for (const ContentPart& part : m.content_parts) {
    switch (part.type) {
      case ContentPartType::kText:
        *out += model ? strip_thinking(part.text) : std::string(python_strip(part.text));
        break;
      case ContentPartType::kImage:
        out->mark(markup::kImage);
        *prev = PrevType::kImage;
        break;
      case ContentPartType::kAudio:
        out->mark(markup::kAudio);
        *prev = PrevType::kAudio;
        break;
      case ContentPartType::kVideo:
        out->mark(markup::kVideo);
        *prev = PrevType::kVideo;
        break;
    }
  }
}

void append_prompt_end(const ChatRenderOptions& options, bool gen_prompt, bool open_turn, const ChatMessage* prefill,
                       PromptBuilder* out) {
  const std::string reasoning = prefill ? prefill->reasoning_content : std::string();
  const std::string text = prefill ? content_text(*prefill) : std::string();
  if (gen_prompt) {
    if (open_turn) {
      out->mark(markup::kTurnOpen);
      *out += "model\n";
    }
    if (!options.enable_thinking && reasoning.empty()) {
      out->mark(markup::kChannelOpen);
      *out += markup::kThoughtLabel;
      *out += "\n";
      out->mark(markup::kChannelClose);
    }
  }
  if (!reasoning.empty()) {
    // The thought as the template writes one in a model turn; the text is never markup.
    out->mark(markup::kChannelOpen);
    *out += markup::kThoughtLabel;
    *out += "\n";
    *out += reasoning;
    if (options.enable_thinking && text.empty()) {
      out->p.prefill_reasoning = true;  // the model goes on thinking
    } else {
      *out += "\n";
      out->mark(markup::kChannelClose);
    }
  }
  *out += text;
  out->p.prefill = !text.empty();
  out->p.prefill_text = text;
  // Text that opened a thought and left it open ("<|channel>thought\nLet me"): the model goes on
  // thinking, as after an open reasoning_content.
  if (open_thought_offset(text) != std::string_view::npos) out->p.prefill_reasoning = true;
}

}  // namespace gs::text::chat

namespace gs::text {

size_t open_thought_offset(std::string_view text) {
  const size_t open = text.rfind(markup::kChannelOpen);
  if (open == std::string_view::npos) return std::string_view::npos;
  // An opener inside a tool call's text (a string argument) is text of that call.
  const size_t call = text.rfind(markup::kToolCallOpen, open);
  if (call != std::string_view::npos) {
    const size_t call_close = text.find(markup::kToolCallClose, call);
    if (call_close == std::string_view::npos || call_close > open) return std::string_view::npos;
  }
  const size_t after = open + markup::kChannelOpen.size();
  if (text.find(markup::kChannelClose, after) != std::string_view::npos) return std::string_view::npos;
  if (text.find(markup::kToolCallOpen, after) != std::string_view::npos) return std::string_view::npos;
  return after;
}

}  // namespace gs::text
