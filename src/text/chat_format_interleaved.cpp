// The message loop of the interleaved Gemma 4 template variant: every message is a turn of
// its own (tool results as <|turn>tool), and earlier tool-call reasoning is kept.
#include <optional>

#include "text/chat_format.h"
#include "text/chat_render_parts.h"

namespace gs::text {

using chat::PrevType;
using chat::PromptBuilder;

Result<RenderedPrompt> render_gemma4_interleaved(std::span<const ChatMessage> messages,
                                                 std::span<const ChatTool> tools, const ChatRenderOptions& options,
                                                 const ChatMessage* prefill) {
  const size_t n_leading_system = chat::leading_system_count(messages, options.merge_leading_system);
  PromptBuilder out;
  PrevType prev = PrevType::kNone;
  chat::append_system_turn(messages.first(n_leading_system), tools, options, &out, &prev);

  const std::span<const ChatMessage> loop = messages.subspan(n_leading_system);
  std::optional<size_t> last_user;
  for (size_t i = 0; i < loop.size(); ++i) {
    if (loop[i].role == ChatRole::kUser) last_user = i;
  }
  for (size_t i = 0; i < loop.size(); ++i) {
    const ChatMessage& m = loop[i];
    const bool model = m.role == ChatRole::kAssistant;
    const char* role = model                             ? "model"
                       : m.role == ChatRole::kTool       ? "tool"
                       : chat::is_system_like(m.role)    ? "system"
                                                         : "user";
    // The template skips the turn opener only for a call right after tool responses, which
    // OpenAI messages (no tool_responses field) never produce.
    if (!(prev == PrevType::kToolResponse && !m.tool_calls.empty())) {
      out.mark(markup::kTurnOpen);
      out += role;
      out += "\n";
    }
    prev = PrevType::kNone;
    if (!m.tool_calls.empty()) {
      if (!m.reasoning_content.empty() && (!last_user || i > *last_user)) {
        out.mark(markup::kChannelOpen);
        out += markup::kThoughtLabel;
        out += "\n";
        out += m.reasoning_content;
        out.mark(markup::kChannelClose);
      }
      for (const ChatToolCall& call : m.tool_calls) {
        GS_RETURN_IF_ERROR(chat::append_tool_call(call, i + n_leading_system, &out));
      }
      prev = PrevType::kToolCall;
    }
    chat::append_content(m, model, &out, &prev);
    out.mark(markup::kTurnClose);
    out += "\n";
  }
  chat::append_prompt_end(options, options.add_generation_prompt || prefill != nullptr,
                          /*open_turn=*/prev != PrevType::kToolResponse, prefill, &out);
  return std::move(out.p);
}

}  // namespace gs::text
