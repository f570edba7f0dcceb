// Pieces shared by the Gemma 4 renderers (31B and interleaved): the prompt builder, the
// system turn, tool calls and results, and message content.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "text/chat_format.h"

namespace gs::text::chat {

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

// The templates' ns.prev_message_type.
enum class PrevType { kNone, kThink, kTool, kToolCall, kToolResponse, kImage, kAudio, kVideo };

inline bool is_system_like(ChatRole r) { return r == ChatRole::kSystem || r == ChatRole::kDeveloper; }
inline bool has_content(const ChatMessage& m) { return !m.content_parts.empty() || !m.content.empty(); }

// Concatenated text of a message (text parts only).
std::string content_text(const ChatMessage& m);

// How many leading messages form the system turn: messages[0] when system/developer, and with
// merging every consecutive one after it.
size_t leading_system_count(std::span<const ChatMessage> messages, bool merge);

// <|turn>system\n[<|think|>\n]SYSTEM<|tool>...<tool|><turn|>\n when the template writes one.
// Sets *prev as the template does.
void append_system_turn(std::span<const ChatMessage> system, std::span<const ChatTool> tools,
                        const ChatRenderOptions& options, PromptBuilder* out, PrevType* prev);

// <|tool_response>response:NAME{value:<|"|>BODY<|"|>}<tool_response|>
void append_tool_response(std::string_view name, std::string_view body, PromptBuilder* out);

// <|tool_call>call:NAME{k:v,...}<tool_call|>; kInvalidArgument when the arguments are not a
// JSON object (naming messages[msg_index]).
Status append_tool_call(const ChatToolCall& call, size_t msg_index, PromptBuilder* out);

// Message content: model text without channel spans, other text stripped, media
// placeholders (which set *prev).
void append_content(const ChatMessage& m, bool model, PromptBuilder* out, PrevType* prev);

// The end of the prompt. Where `gen_prompt`, the generation prompt: <|turn>model\n (when
// `open_turn`) and, without thinking, the empty thought block. Then a prefill (the trailing
// assistant message, ChatRenderOptions::prefill_assistant; null: none): its reasoning as the
// turn's thought, in place of the empty block, open when thinking is on and it has no text;
// then its text. Sets out->p.prefill and prefill_reasoning.
void append_prompt_end(const ChatRenderOptions& options, bool gen_prompt, bool open_turn, const ChatMessage* prefill,
                       PromptBuilder* out);

}  // namespace gs::text::chat

namespace gs::text {
// The message loop of google-gemma-4-31B-it-interleaved.jinja (chat_format_interleaved.cpp),
// then the prompt's end with `prefill` (null: none), which is not one of `messages`.
Result<RenderedPrompt> render_gemma4_interleaved(std::span<const ChatMessage> messages,
                                                 std::span<const ChatTool> tools, const ChatRenderOptions& options,
                                                 const ChatMessage* prefill);
}  // namespace gs::text
