// Conversion of OpenAI chat JSON into ChatMessage / ChatTool, with path-naming errors.
#include "text/chat_json.h"

#include <algorithm>
#include <string>

#include "text/chat_values.h"

namespace gs::text {
namespace {

using nlohmann::json;

Status bad(const std::string& path, std::string_view what) {
  return make_status(StatusCode::kInvalidArgument, "{}: {}", path, what);
}

// Optional string member: absent or null -> "", string -> it, anything else -> error.
Status optional_string(const json& obj, const char* key, const std::string& path, std::string* out) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::ok_status();
  if (!it->is_string()) return bad(path + "." + key, "must be a string");
  *out = it->get<std::string>();
  return Status::ok_status();
}

Status parse_content(const json& content, const std::string& path, ChatMessage* m) {
  if (content.is_null()) return Status::ok_status();
  if (content.is_string()) {
    m->content = content.get<std::string>();
    return Status::ok_status();
  }
  if (!content.is_array()) return bad(path, "must be a string, null or an array of content parts");
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string ppath = path + "[" + std::to_string(i) + "]";
    if (part.is_string()) {  // lenient: a bare string part is text
      m->content_parts.push_back({ContentPartType::kText, part.get<std::string>()});
      continue;
    }
    if (!part.is_object()) return bad(ppath, "must be an object");
    const auto type_it = part.find("type");
    if (type_it == part.end() || !type_it->is_string()) return bad(ppath + ".type", "must be a string");
    const std::string type = type_it->get<std::string>();
    ContentPart p;
    if (type == "text" || type == "input_text") {
      p.type = ContentPartType::kText;
      const auto t = part.find("text");
      if (t == part.end() || !t->is_string()) return bad(ppath + ".text", "must be a string");
      p.text = t->get<std::string>();
    } else if (type == "refusal" && m->role == ChatRole::kAssistant) {
      // OpenAI's part for a refusal the model gave: its text is what the assistant said.
      p.type = ContentPartType::kText;
      const auto t = part.find("refusal");
      if (t == part.end() || !t->is_string()) return bad(ppath + ".refusal", "must be a string");
      p.text = t->get<std::string>();
    } else if (type == "image" || type == "image_url" || type == "input_image") {
      p.type = ContentPartType::kImage;
    } else if (type == "audio" || type == "input_audio") {
      p.type = ContentPartType::kAudio;
    } else if (type == "video" || type == "video_url") {
      p.type = ContentPartType::kVideo;
    } else {
      return bad(ppath + ".type", "unknown content part type \"" + type + "\"");
    }
    m->content_parts.push_back(std::move(p));
  }
  return Status::ok_status();
}

// A call's {name, arguments} object at `path` (a tool call's `function`, or a legacy
// assistant message's `function_call`).
Status parse_function(const json& fn, const std::string& path, ChatToolCall* call) {
  if (!fn.is_object()) return bad(path, "must be an object");
  const auto name = fn.find("name");
  if (name == fn.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return bad(path + ".name", "must be a non-empty string");
  }
  call->name = name->get<std::string>();
  const auto args = fn.find("arguments");
  if (args == fn.end() || args->is_null()) {
    call->arguments_json = "{}";
  } else if (args->is_string()) {
    call->arguments_json = args->get<std::string>();
  } else if (args->is_object()) {
    call->arguments_json = args->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    return bad(path + ".arguments", "must be a JSON string or an object");
  }
  return Status::ok_status();
}

Status parse_tool_call(const json& tc, const std::string& path, ChatToolCall* call) {
  if (!tc.is_object()) return bad(path, "must be an object");
  GS_RETURN_IF_ERROR(optional_string(tc, "id", path, &call->id));
  const auto fn = tc.find("function");
  if (fn == tc.end() || !fn->is_object()) return bad(path + ".function", "must be an object");
  return parse_function(*fn, path + ".function", call);
}

// The legacy (pre-tools) form of a turn's call: an assistant message's `function_call`
// ({name, arguments}), answered by a `function` message that names it. One call, given the
// id kLegacyFunctionCallId (the legacy form has none; the answer is matched by name).
Status parse_legacy_function_call(const json& jm, const std::string& path, ChatMessage* m) {
  const auto fc = jm.find("function_call");
  if (fc == jm.end() || fc->is_null()) return Status::ok_status();
  if (m->role != ChatRole::kAssistant) return bad(path + ".function_call", "is only allowed in an assistant message");
  if (!m->tool_calls.empty()) {
    return bad(path + ".function_call", "cannot be combined with tool_calls (the legacy and the current form of a call)");
  }
  ChatToolCall call;
  call.id = std::string(kLegacyFunctionCallId);
  GS_RETURN_IF_ERROR(parse_function(*fc, path + ".function_call", &call));
  m->tool_calls.push_back(std::move(call));
  return Status::ok_status();
}

}  // namespace

Result<std::vector<ChatMessage>> chat_messages_from_json(const nlohmann::json& messages) {
  if (!messages.is_array()) return bad("messages", "must be an array");
  std::vector<ChatMessage> out;
  out.reserve(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& jm = messages[i];
    const std::string path = "messages[" + std::to_string(i) + "]";
    if (!jm.is_object()) return bad(path, "must be an object");
    ChatMessage m;
    const auto role = jm.find("role");
    if (role == jm.end() || !role->is_string()) return bad(path + ".role", "must be a string");
    // "function": the legacy form of a tool message, which names the function it answers.
    const bool function_role = *role == "function";
    auto parsed_role = function_role ? Result<ChatRole>(ChatRole::kTool) : parse_chat_role(role->get<std::string>());
    if (!parsed_role.ok()) return bad(path + ".role", parsed_role.status().message());
    m.role = *parsed_role;
    if (const auto c = jm.find("content"); c != jm.end()) GS_RETURN_IF_ERROR(parse_content(*c, path + ".content", &m));
    if (m.role == ChatRole::kAssistant) {
      // OpenAI's assistant turn that refused: content null and the text in `refusal` (as a
      // client replays it). The refusal is what the assistant said.
      std::string refusal;
      GS_RETURN_IF_ERROR(optional_string(jm, "refusal", path, &refusal));
      if (m.content.empty() && m.content_parts.empty()) m.content = std::move(refusal);
    }
    // vLLM's newer name for the same field. An empty or null one gives nothing (as in the
    // template's `reasoning or reasoning_content`); two that give different texts are refused.
    std::string reasoning;
    GS_RETURN_IF_ERROR(optional_string(jm, "reasoning_content", path, &m.reasoning_content));
    GS_RETURN_IF_ERROR(optional_string(jm, "reasoning", path, &reasoning));
    if (!reasoning.empty() && !m.reasoning_content.empty() && reasoning != m.reasoning_content) {
      return bad(path + ".reasoning", "differs from reasoning_content (they are one field by two names: send one)");
    }
    if (m.reasoning_content.empty()) m.reasoning_content = std::move(reasoning);
    GS_RETURN_IF_ERROR(optional_string(jm, "tool_call_id", path, &m.tool_call_id));
    GS_RETURN_IF_ERROR(optional_string(jm, "name", path, &m.name));
    if (const auto tcs = jm.find("tool_calls"); tcs != jm.end() && !tcs->is_null()) {
      if (!tcs->is_array()) return bad(path + ".tool_calls", "must be an array");
      for (size_t k = 0; k < tcs->size(); ++k) {
        ChatToolCall call;
        GS_RETURN_IF_ERROR(parse_tool_call((*tcs)[k], path + ".tool_calls[" + std::to_string(k) + "]", &call));
        m.tool_calls.push_back(std::move(call));
      }
    }
    GS_RETURN_IF_ERROR(parse_legacy_function_call(jm, path, &m));
    if (function_role && m.name.empty()) return bad(path + ".name", "is required for a function message");
    out.push_back(std::move(m));
  }
  return out;
}

Result<std::vector<ChatTool>> chat_tools_from_json(const nlohmann::json& tools, std::string_view field) {
  if (tools.is_null()) return std::vector<ChatTool>{};
  if (!tools.is_array()) return bad(std::string(field), "must be an array");
  std::vector<ChatTool> out;
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& jt = tools[i];
    const std::string path = std::string(field) + "[" + std::to_string(i) + "]";
    if (!jt.is_object()) return bad(path, "must be an object");
    if (const auto type = jt.find("type"); type != jt.end() && (!type->is_string() || *type != "function")) {
      return bad(path + ".type", "must be \"function\"");
    }
    const auto fn_it = jt.find("function");
    const json& fn = (fn_it != jt.end()) ? *fn_it : jt;  // lenient: a flat {name, parameters}
    const std::string fpath = (fn_it != jt.end()) ? path + ".function" : path;
    if (!fn.is_object()) return bad(fpath, "must be an object");
    ChatTool t;
    const auto name = fn.find("name");
    if (name == fn.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
      return bad(fpath + ".name", "must be a non-empty string");
    }
    t.name = name->get<std::string>();
    GS_RETURN_IF_ERROR(optional_string(fn, "description", fpath, &t.description));
    if (const auto p = fn.find("parameters"); p != fn.end() && !p->is_null()) {
      if (!p->is_object()) return bad(fpath + ".parameters", "must be a JSON schema object");
      // Arguments are an object (the Gemma call markup writes `{...}`), so a schema whose own
      // `type` admits no object describes no call (OpenAI's API refuses it too). A schema
      // without `type`, or with one the template reads as absent (null, "", []), is taken as
      // it is.
      if (const auto ty = p->find("type"); ty != p->end() && chat::truthy(&*ty)) {
        const bool object = (ty->is_string() && *ty == "object") ||
                            (ty->is_array() && std::find(ty->begin(), ty->end(), json("object")) != ty->end());
        if (!object) {
          return bad(fpath + ".parameters.type",
                     "must be \"object\" (a function's arguments are an object), got " +
                         ty->dump(-1, ' ', false, json::error_handler_t::replace));
        }
      }
      t.parameters = *p;
    }
    if (const auto r = fn.find("response"); r != fn.end()) t.response = *r;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace gs::text
