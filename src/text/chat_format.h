// Gemma 4 chat format: typed OpenAI-style messages rendered to the prompt text that the
// official `google-gemma-4-31B-it.jinja` template produces (spec §9.1), byte for byte.
//
// The renderer is C++ written from the template's behaviour, not a Jinja engine. Where
// the template cannot express an input it either does what the template does or returns
// kInvalidArgument; docs/decisions/0005-gemma4-chat-format.md lists which, case by case.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/text_span.h"

namespace gs::text {

enum class ChatRole { kSystem, kDeveloper, kUser, kAssistant, kTool };

// "system", "developer", "user", "assistant", "tool" (OpenAI role names); kInvalidArgument
// for anything else.
Result<ChatRole> parse_chat_role(std::string_view role);
const char* chat_role_name(ChatRole role);

enum class ContentPartType { kText, kImage, kAudio, kVideo };

struct ContentPart {
  ContentPartType type = ContentPartType::kText;
  std::string text;  // kText only
};

// One call made by the assistant. `arguments_json` is the OpenAI `function.arguments`
// string: a JSON object ("" counts as {}).
struct ChatToolCall {
  std::string id;
  std::string name;
  std::string arguments_json;
};

struct ChatMessage {
  ChatRole role = ChatRole::kUser;
  // Text content. When `content_parts` is non-empty it is used instead (OpenAI's array
  // form). An empty string and no parts both mean "no content" (OpenAI null).
  std::string content;
  std::vector<ContentPart> content_parts;
  // Assistant: the model's earlier reasoning. The template renders it only on assistant
  // messages with tool calls after the last user message (it keeps the tool-use chain).
  std::string reasoning_content;
  std::vector<ChatToolCall> tool_calls;  // assistant
  std::string tool_call_id;              // tool: the id of the call this result answers
  std::string name;                      // tool: function name, used only without tool_call_id
};

// One function the model may call; `parameters` is its JSON schema (null: none).
struct ChatTool {
  std::string name;
  std::string description;
  nlohmann::json parameters;
  // The function's "response" (Gemma's declaration of what it returns), when the key is
  // there, null included: the templates print it after the parameters.
  std::optional<nlohmann::json> response;
};

// Which Gemma 4 template to reproduce. kGemma4 is google-gemma-4-31B-it.jinja (tool results
// folded into the model turn); kGemma4Interleaved is the older variant
// (google-gemma-4-31B-it-interleaved.jinja: tool results as <|turn>tool turns).
enum class ChatTemplate { kGemma4, kGemma4Interleaved };

// The variant a GGUF's `tokenizer.chat_template` source is (kGemma4 when it is neither; the
// caller may log that the embedded template is not one we reproduce).
struct ChatTemplateMatch {
  ChatTemplate variant = ChatTemplate::kGemma4;
  bool recognised = false;
};
ChatTemplateMatch detect_chat_template(std::string_view jinja_source);

struct ChatRenderOptions {
  ChatTemplate variant = ChatTemplate::kGemma4;
  // Template variable `enable_thinking`: <|think|> in the system turn; without it the
  // generation prompt ends in an empty thought block, which tells the model not to think.
  bool enable_thinking = false;
  bool add_generation_prompt = true;
  // Merge consecutive leading system/developer messages into the one system turn (joined
  // by a blank line). The template honours only messages[0]; without merging the others
  // would become extra system turns (bug-case 50).
  bool merge_leading_system = true;
  // A trailing assistant message without tool calls becomes a prefill: the conversation
  // before it with the generation prompt, then the message, open, which the model continues
  // (llama-server's behaviour; vLLM's continue_final_message): its reasoning as the turn's
  // thought (`<|channel>thought\n` REASONING, left open when thinking is on and no text
  // follows, else closed as the template closes one, in place of the empty thought block),
  // then its text. Empty, it adds nothing to the generation prompt. Off, it is a closed turn
  // as the template writes it.
  bool prefill_assistant = false;
};

// The prompt text for `messages` (without the leading "<bos>": the tokenizer adds BOS).
// Tokenize it with parse_special = true, or better render_chat_prompt + encode_prompt.
//
// Errors (kInvalidArgument, naming the message index): no messages; a tool message that
// follows no assistant message with tool calls; a tool_call_id that matches no call of
// that assistant message (bug-case 53); a tool message with neither tool_call_id nor
// name; tool-call arguments that are not a JSON object.
Result<std::string> render_chat(std::span<const ChatMessage> messages,
                                std::span<const ChatTool> tools, const ChatRenderOptions& options);

// A rendered prompt and the byte ranges where the renderer wrote markup tokens (<|turn>,
// <turn|>, <|think|>, <|tool>, ...). Tokenizer::encode_prompt matches control tokens only
// there, so text inside messages can never become a control token (prompt injection).
struct RenderedPrompt {
  std::string text;
  std::vector<TextSpan> markup;  // sorted, non-overlapping
  bool prefill = false;            // it ends with a trailing assistant message's open text
  // It ends inside a trailing assistant message's open thought: its reasoning (thinking on, no
  // text after it), or one that its text opened and left open (open_thought_offset).
  bool prefill_reasoning = false;
  std::string prefill_text;        // that open text, as the prompt ends with it ("" without one)
};
Result<RenderedPrompt> render_chat_prompt(std::span<const ChatMessage> messages, std::span<const ChatTool> tools,
                                          const ChatRenderOptions& options);

// Where an assistant message's text (a prefill, as the prompt ends with it) leaves a thought
// open: the offset just past its last <|channel> when neither <channel|> nor <|tool_call> (a
// call inside an open thought ends it, as the output parser reads one) follows that opener;
// std::string_view::npos when it leaves none. The chat markers are user-defined tokens, matched
// in any text, so the model reads such text as its own open thought.
size_t open_thought_offset(std::string_view text);

// The text the template writes for one tool declaration, <|tool>declaration:...<tool|>
// excluded (exposed for tests and the prompt-size estimate). It recurses over the schema:
// render_chat_prompt refuses schemas nested deeper than 64 levels before calling it.
std::string render_tool_declaration(const ChatTool& tool, ChatTemplate variant = ChatTemplate::kGemma4);

// Gemma 4 markup, spelled once for the renderer, the parser and the server.
namespace markup {
inline constexpr std::string_view kBos = "<bos>";
inline constexpr std::string_view kTurnOpen = "<|turn>";
inline constexpr std::string_view kTurnClose = "<turn|>";
inline constexpr std::string_view kThink = "<|think|>";
inline constexpr std::string_view kChannelOpen = "<|channel>";
inline constexpr std::string_view kChannelClose = "<channel|>";
inline constexpr std::string_view kThoughtLabel = "thought";
inline constexpr std::string_view kToolOpen = "<|tool>";
inline constexpr std::string_view kToolClose = "<tool|>";
inline constexpr std::string_view kToolCallOpen = "<|tool_call>";
inline constexpr std::string_view kToolCallClose = "<tool_call|>";
inline constexpr std::string_view kToolResponseOpen = "<|tool_response>";
inline constexpr std::string_view kToolResponseClose = "<tool_response|>";
inline constexpr std::string_view kQuote = "<|\"|>";
inline constexpr std::string_view kImage = "<|image|>";
inline constexpr std::string_view kAudio = "<|audio|>";
inline constexpr std::string_view kVideo = "<|video|>";
// The markers the chat format writes and the output parser reads, each one vocabulary token
// (create_engine refuses a vocabulary without one of them).
inline constexpr std::array<std::string_view, 12> kChatMarkers = {
    kTurnOpen,    kTurnClose,    kThink,           kChannelOpen,      kChannelClose, kToolOpen,
    kToolClose,   kToolCallOpen, kToolCallClose,   kToolResponseOpen, kToolResponseClose, kQuote,
};
// Markup that ends a tool call wherever it appears, inside an argument's string too (they are
// special tokens: a model that writes one inside a value has lost track of its quotes). The
// output parser ends the call there, so a forced call's grammar never writes one in a value.
inline constexpr std::array<std::string_view, 6> kCallTerminators = {
    kToolCallClose, kToolCallOpen, kToolResponseOpen, kToolResponseClose, kTurnClose, kTurnOpen,
};
}  // namespace markup

}  // namespace gs::text
