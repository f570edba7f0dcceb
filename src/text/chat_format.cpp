// Gemma 4 chat renderer (stub until the implementation lands).
#include "text/chat_format.h"

namespace gs::text {

Result<ChatRole> parse_chat_role(std::string_view role) {
  if (role == "system") return ChatRole::kSystem;
  if (role == "developer") return ChatRole::kDeveloper;
  if (role == "user") return ChatRole::kUser;
  if (role == "assistant") return ChatRole::kAssistant;
  if (role == "tool") return ChatRole::kTool;
  return make_status(StatusCode::kInvalidArgument, "unknown chat role \"{}\"", role);
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

Result<std::string> render_chat(std::span<const ChatMessage>, std::span<const ChatTool>,
                                const ChatRenderOptions&) {
  return Status(StatusCode::kUnimplemented, "render_chat: not implemented yet");
}

std::string render_tool_declaration(const ChatTool&) { return {}; }

}  // namespace gs::text
