// OpenAI chat JSON (messages, tools) to the typed chat structures of chat_format.h.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/chat_format.h"

namespace gs::text {

// `messages` of a chat completion request. Accepts content as a string, null or an array of
// parts ({"type":"text","text":...}; "image"/"image_url"/"input_image" -> image,
// "audio"/"input_audio" -> audio, "video"/"video_url" -> video; in an assistant message
// {"type":"refusal","refusal":...} -> text, and a `refusal` string is its text when it has no
// content, as OpenAI's refusing turns are replayed); `reasoning_content` or
// vLLM's `reasoning` (one field by two names: both, non-empty and different, is an error);
// tool_calls with `function.arguments` as a JSON string or an object. The legacy form of
// calls (OpenAI's deprecated `functions`, decision 0030) is read as the current one: an
// assistant's `function_call` {name, arguments} is its one tool call, with the id
// kLegacyFunctionCallId, and a message of role "function" is a tool message answering the
// call its (required) `name` names. Errors: kInvalidArgument naming the path
// ("messages[2].tool_calls[0].function.name"); `function_call` beside `tool_calls`, or in
// a message that is not the assistant's, is one.
Result<std::vector<ChatMessage>> chat_messages_from_json(const nlohmann::json& messages);

// The id given to a legacy `function_call` of a history turn (the legacy form has none).
inline constexpr std::string_view kLegacyFunctionCallId = "call_function_call";

// `tools` of a request: [{"type":"function","function":{name, description, parameters}}]
// (a flat {name, description, parameters} is read too: the legacy `functions` entries).
// `field` is the request field the list came from ("tools", or "functions"), the root of
// every error's path. Errors: kInvalidArgument naming the path, among them `parameters` that is
// not an object or whose top-level `type` admits no object ("tools[0].function.parameters.type:
// must be \"object\" ...").
Result<std::vector<ChatTool>> chat_tools_from_json(const nlohmann::json& tools, std::string_view field = "tools");

}  // namespace gs::text
