// The Gemma 4 chat renderer: the message loop of google-gemma-4-31B-it.jinja in C++.
#include "text/chat_format.h"

#include <optional>

#include "text/chat_values.h"

namespace gs::text {
namespace {

using nlohmann::json;

// The prompt text plus where the renderer itself wrote markup tokens.
struct PromptBuilder {
  RenderedPrompt p;
  void mark(std::string_view m) {
    p.markup.push_back(TextSpan{p.text.size(), m.size()});
    p.text.append(m);
  }
  PromptBuilder& operator+=(std::string_view s) {
    p.text.append(s);
    return *this;
  }
  void append(std::string_view s) { p.text.append(s); }
};

// The template's ns.prev_message_type.
enum class PrevType { kNone, kThink, kTool, kToolCall, kToolResponse, kImage, kAudio, kVideo };

bool is_system_like(ChatRole r) { return r == ChatRole::kSystem || r == ChatRole::kDeveloper; }

bool has_content(const ChatMessage& m) { return !m.content_parts.empty() || !m.content.empty(); }

// Concatenated text of a message (text parts only).
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
  if (!chat::python_strip(call.arguments_json).empty()) {
    args = json::parse(call.arguments_json, nullptr, /*allow_exceptions=*/false);
    if (args.is_discarded()) {
      return make_status(StatusCode::kInvalidArgument,
                         "messages[{}]: the arguments of tool call \"{}\" are not valid JSON", msg_index, call.name);
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
  for (const auto& [key, value] : chat::dictsort(args)) {
    if (!first) out->append(",");
    first = false;
    std::string item = key;
    item.push_back(':');
    chat::format_argument(*value, /*escape_keys=*/false, &item);
    out->append(item);
  }
  out->append("}");
  out->mark(markup::kToolCallClose);
  return Status::ok_status();
}

}  // namespace

Result<ChatRole> parse_chat_role(std::string_view role) {
  if (role == "system") return ChatRole::kSystem;
  if (role == "developer") return ChatRole::kDeveloper;
  if (role == "user") return ChatRole::kUser;
  if (role == "assistant") return ChatRole::kAssistant;
  if (role == "tool") return ChatRole::kTool;
  return make_status(StatusCode::kInvalidArgument,
                     "unknown chat role \"{}\" (expected system, developer, user, assistant or tool)", role);
}

const char* chat_role_name(ChatRole role) {
  switch (role) {
    case ChatRole::kSystem: return "system";
    case ChatRole::kDeveloper: return "developer";
    case ChatRole::kUser: return "user";
    case ChatRole::kAssistant: return "assistant";
    case ChatRole::kTool: return "tool";
  }
  return "?";
}

Result<std::string> render_chat(std::span<const ChatMessage> messages, std::span<const ChatTool> tools,
                                const ChatRenderOptions& options) {
  GS_ASSIGN_OR_RETURN(RenderedPrompt p, render_chat_prompt(messages, tools, options));
  return std::move(p.text);
}

Result<RenderedPrompt> render_chat_prompt(std::span<const ChatMessage> messages, std::span<const ChatTool> tools,
                                          const ChatRenderOptions& options) {
  if (messages.empty()) return Status(StatusCode::kInvalidArgument, "messages: at least one message is required");

  // The system turn takes messages[0] when it is system/developer; with merging, every
  // leading system/developer message (bug-case 50).
  size_t n_leading_system = 0;
  if (is_system_like(messages[0].role)) {
    n_leading_system = 1;
    if (options.merge_leading_system) {
      while (n_leading_system < messages.size() && is_system_like(messages[n_leading_system].role)) {
        ++n_leading_system;
      }
    }
  }

  PromptBuilder out;
  PrevType prev = PrevType::kNone;
  if (options.enable_thinking || !tools.empty() || n_leading_system > 0) {
    out.mark(markup::kTurnOpen);
    out += "system\n";
    if (options.enable_thinking) {
      out.mark(markup::kThink);
      out += "\n";
      prev = PrevType::kThink;
    }
    std::string system_text;
    for (size_t i = 0; i < n_leading_system; ++i) {
      const std::string text = content_text(messages[i]);
      const std::string_view stripped = chat::python_strip(text);
      if (n_leading_system > 1 && stripped.empty()) continue;
      if (!system_text.empty()) system_text += "\n\n";
      system_text += stripped;
    }
    out += system_text;
    for (const ChatTool& tool : tools) {
      out.mark(markup::kToolOpen);
      out += chat::python_strip(render_tool_declaration(tool));
      out.mark(markup::kToolClose);
    }
    if (!tools.empty()) prev = PrevType::kTool;
    out.mark(markup::kTurnClose);
    out += "\n";
  }

  const std::span<const ChatMessage> loop = messages.subspan(n_leading_system);
  const auto index_of = [&](size_t i) { return i + n_leading_system; };  // index in `messages`
  std::optional<size_t> last_user;
  for (size_t i = 0; i < loop.size(); ++i) {
    if (loop[i].role == ChatRole::kUser) last_user = i;
  }

  for (size_t i = 0; i < loop.size(); ++i) {
    const ChatMessage& m = loop[i];
    if (m.role == ChatRole::kTool) {
      // Tool results are rendered by the forward scan of the assistant message they answer;
      // one that answers none would vanish silently in the template.
      size_t j = i;
      while (j > 0 && loop[j - 1].role == ChatRole::kTool) --j;
      if (j == 0 || loop[j - 1].role != ChatRole::kAssistant || loop[j - 1].tool_calls.empty()) {
        return make_status(StatusCode::kInvalidArgument,
                           "messages[{}]: a tool message must follow an assistant message with tool_calls",
                           index_of(i));
      }
      continue;
    }
    prev = PrevType::kNone;
    const bool model = m.role == ChatRole::kAssistant;
    // Developer messages after the first are system turns: Gemma has no developer role.
    const char* role = model ? "model" : (is_system_like(m.role) ? "system" : "user");
    std::optional<ChatRole> prev_non_tool;
    for (size_t j = i; j-- > 0;) {
      if (loop[j].role != ChatRole::kTool) {
        prev_non_tool = loop[j].role;
        break;
      }
    }
    const bool continue_model_turn = model && prev_non_tool == ChatRole::kAssistant;
    if (!continue_model_turn) {
      out.mark(markup::kTurnOpen);
      out += role;
      out += "\n";
    }

    if (!m.reasoning_content.empty() && (!last_user || i > *last_user) && !m.tool_calls.empty()) {
      out.mark(markup::kChannelOpen);
      out += markup::kThoughtLabel;
      out += "\n";
      out += m.reasoning_content;
      out += "\n";
      out.mark(markup::kChannelClose);
    }

    if (!m.tool_calls.empty()) {
      for (const ChatToolCall& call : m.tool_calls) GS_RETURN_IF_ERROR(append_tool_call(call, index_of(i), &out));
      prev = PrevType::kToolCall;
    }

    bool responses_rendered = false;
    if (!m.tool_calls.empty()) {
      for (size_t k = i + 1; k < loop.size() && loop[k].role == ChatRole::kTool; ++k) {
        const ChatMessage& follow = loop[k];
        std::string name;
        if (!follow.tool_call_id.empty()) {
          for (const ChatToolCall& call : m.tool_calls) {
            if (call.id == follow.tool_call_id) name = call.name;
          }
          if (name.empty()) {
            return make_status(StatusCode::kInvalidArgument,
                               "messages[{}]: tool_call_id \"{}\" matches no tool call of messages[{}]", index_of(k),
                               follow.tool_call_id, index_of(i));
          }
        } else if (!follow.name.empty()) {
          name = follow.name;
        } else {
          return make_status(StatusCode::kInvalidArgument, "messages[{}]: a tool message needs a tool_call_id",
                             index_of(k));
        }
        append_tool_response(name, content_text(follow), &out);
        responses_rendered = true;
        prev = PrevType::kToolResponse;
      }
    }

    if (m.content_parts.empty()) {
      out += model ? chat::strip_thinking(m.content) : std::string(chat::python_strip(m.content));
    } else {
      for (const ContentPart& part : m.content_parts) {
        switch (part.type) {
          case ContentPartType::kText:
            out += model ? chat::strip_thinking(part.text) : std::string(chat::python_strip(part.text));
            break;
          case ContentPartType::kImage:
            out.mark(markup::kImage);
            prev = PrevType::kImage;
            break;
          case ContentPartType::kAudio:
            out.mark(markup::kAudio);
            prev = PrevType::kAudio;
            break;
          case ContentPartType::kVideo:
            out.mark(markup::kVideo);
            prev = PrevType::kVideo;
            break;
        }
      }
    }

    if (prev == PrevType::kToolCall && !responses_rendered) {
      out.mark(markup::kToolResponseOpen);
    } else if (!(responses_rendered && !has_content(m))) {
      out.mark(markup::kTurnClose);
      out += "\n";
    }
  }

  if (options.add_generation_prompt && prev != PrevType::kToolResponse && prev != PrevType::kToolCall) {
    out.mark(markup::kTurnOpen);
    out += "model\n";
    if (!options.enable_thinking) {
      out.mark(markup::kChannelOpen);
      out += markup::kThoughtLabel;
      out += "\n";
      out.mark(markup::kChannelClose);
    }
  }
  return std::move(out.p);
}

}  // namespace gs::text
