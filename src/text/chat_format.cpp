// The Gemma 4 chat renderer: the message loop of google-gemma-4-31B-it.jinja in C++.
#include "text/chat_format.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "text/chat_render_parts.h"
#include "text/chat_values.h"

namespace gs::text {

using chat::PrevType;
using chat::PromptBuilder;

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

namespace {

// The message loop of google-gemma-4-31B-it.jinja, then the prompt's end with `prefill`
// (null: none), which is not one of `messages`.
Result<RenderedPrompt> render_gemma4(std::span<const ChatMessage> messages, std::span<const ChatTool> tools,
                                     const ChatRenderOptions& options, const ChatMessage* prefill) {
  // The system turn takes messages[0] when it is system/developer; with merging, every
  // leading system/developer message (bug-case 50).
  const size_t n_leading_system = chat::leading_system_count(messages, options.merge_leading_system);
  PromptBuilder out;
  PrevType prev = PrevType::kNone;
  chat::append_system_turn(messages.first(n_leading_system), tools, options, &out, &prev);

  const std::span<const ChatMessage> loop = messages.subspan(n_leading_system);
  const auto index_of = [&](size_t i) { return i + n_leading_system; };  // index in `messages`
  std::optional<size_t> last_user;
  for (size_t i = 0; i < loop.size(); ++i) {
    if (loop[i].role == ChatRole::kUser) last_user = i;
  }

  // The last message before `i` that is not a tool result: what a tool message answers, and
  // whether an assistant message continues the model turn. Kept as the loop goes, so a long
  // run of results costs no scan back over it.
  const ChatMessage* prev_non_tool = nullptr;
  for (size_t i = 0; i < loop.size(); ++i) {
    const ChatMessage& m = loop[i];
    if (m.role == ChatRole::kTool) {
      // Tool results are rendered by the forward scan of the assistant message they answer;
      // one that answers none would vanish silently in the template.
      if (!prev_non_tool || prev_non_tool->role != ChatRole::kAssistant || prev_non_tool->tool_calls.empty()) {
        return make_status(StatusCode::kInvalidArgument,
                           "messages[{}]: a tool message must follow an assistant message with tool_calls",
                           index_of(i));
      }
      continue;
    }
    prev = PrevType::kNone;
    const bool model = m.role == ChatRole::kAssistant;
    // Developer messages after the first are system turns: Gemma has no developer role.
    const char* role = model ? "model" : (chat::is_system_like(m.role) ? "system" : "user");
    const bool continue_model_turn = model && prev_non_tool && prev_non_tool->role == ChatRole::kAssistant;
    prev_non_tool = &m;
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
      for (const ChatToolCall& call : m.tool_calls) GS_RETURN_IF_ERROR(chat::append_tool_call(call, index_of(i), &out));
      prev = PrevType::kToolCall;
    }

    bool responses_rendered = false;
    if (!m.tool_calls.empty()) {
      // Call id -> function name; a repeated id names its last call.
      std::unordered_map<std::string_view, std::string_view> name_of_id;
      for (const ChatToolCall& call : m.tool_calls) name_of_id[call.id] = call.name;
      for (size_t k = i + 1; k < loop.size() && loop[k].role == ChatRole::kTool; ++k) {
        const ChatMessage& follow = loop[k];
        std::string name;
        if (!follow.tool_call_id.empty()) {
          const auto found = name_of_id.find(follow.tool_call_id);
          if (found != name_of_id.end()) name = found->second;
          if (name.empty()) {
            return make_status(StatusCode::kInvalidArgument,
                               "messages[{}].tool_call_id \"{}\" matches no tool call of messages[{}]", index_of(k),
                               follow.tool_call_id, index_of(i));
          }
        } else if (!follow.name.empty()) {
          name = follow.name;
        } else {
          return make_status(StatusCode::kInvalidArgument, "messages[{}].tool_call_id is required for a tool message",
                             index_of(k));
        }
        chat::append_tool_response(name, chat::content_text(follow), &out);
        responses_rendered = true;
        prev = PrevType::kToolResponse;
      }
    }

    chat::append_content(m, model, &out, &prev);

    if (prev == PrevType::kToolCall && !responses_rendered) {
      out.mark(markup::kToolResponseOpen);
    } else if (!(responses_rendered && !chat::has_content(m))) {
      out.mark(markup::kTurnClose);
      out += "\n";
    }
  }

  // No generation prompt after a tool call or result: the model's turn goes on.
  const bool turn_open = prev == PrevType::kToolResponse || prev == PrevType::kToolCall;
  chat::append_prompt_end(options, (options.add_generation_prompt || prefill != nullptr) && !turn_open,
                          /*open_turn=*/true, prefill, &out);
  return std::move(out.p);
}

}  // namespace

Result<RenderedPrompt> render_chat_prompt(std::span<const ChatMessage> messages, std::span<const ChatTool> tools,
                                          const ChatRenderOptions& options) {
  if (messages.empty()) return Status(StatusCode::kInvalidArgument, "messages: at least one message is required");
  for (size_t i = 0; i < tools.size(); ++i) {
    if (chat::json_nesting_exceeds(tools[i].parameters, chat::kMaxJsonNesting)) {
      return make_status(StatusCode::kInvalidArgument, "tools[{}].function.parameters: nested deeper than {} levels",
                         i, chat::kMaxJsonNesting);
    }
  }
  // A final assistant message without tool calls (and text parts only) is continued: the
  // conversation before it is rendered, then the prompt's end holds the message, open.
  const ChatMessage* prefill = nullptr;
  const ChatMessage& last = messages.back();
  if (options.prefill_assistant && last.role == ChatRole::kAssistant && last.tool_calls.empty() &&
      std::all_of(last.content_parts.begin(), last.content_parts.end(),
                  [](const ContentPart& p) { return p.type == ContentPartType::kText; })) {
    prefill = &last;
    messages = messages.first(messages.size() - 1);
  }
  switch (options.variant) {
    case ChatTemplate::kGemma4:
      return render_gemma4(messages, tools, options, prefill);
    case ChatTemplate::kGemma4Interleaved:
      return render_gemma4_interleaved(messages, tools, options, prefill);
  }
  return Status(StatusCode::kInternal, "render_chat_prompt: unknown template variant");
}

ChatTemplateMatch detect_chat_template(std::string_view src) {
  const bool gemma4 = src.find("<|turn>") != std::string_view::npos && src.find("call:") != std::string_view::npos;
  if (!gemma4) return {};
  // The 31B template folds OpenAI tool messages into the model turn; the interleaved variant
  // gives them turns of their own and knows only the legacy tool_responses field.
  if (src.find("format_tool_response_block") != std::string_view::npos) return {ChatTemplate::kGemma4, true};
  if (src.find("tool_responses") != std::string_view::npos) return {ChatTemplate::kGemma4Interleaved, true};
  return {ChatTemplate::kGemma4, false};
}

}  // namespace gs::text
