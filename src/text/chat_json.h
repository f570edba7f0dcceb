// OpenAI chat JSON (messages, tools) to the typed chat structures of chat_format.h.
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "core/status.h"
#include "text/chat_format.h"

namespace gs::text {

// `messages` of a chat completion request. Accepts content as a string, null or an array of
// parts ({"type":"text","text":...}; "image"/"image_url"/"input_image" -> image,
// "audio"/"input_audio" -> audio, "video"/"video_url" -> video); `reasoning_content` or
// vLLM's `reasoning` (one field by two names: both, non-empty and different, is an error);
// tool_calls with `function.arguments` as a JSON string or an object.
// Errors: kInvalidArgument naming the path ("messages[2].tool_calls[0].function.name").
Result<std::vector<ChatMessage>> chat_messages_from_json(const nlohmann::json& messages);

// `tools` of a request: [{"type":"function","function":{name, description, parameters}}].
// Errors: kInvalidArgument naming the path.
Result<std::vector<ChatTool>> chat_tools_from_json(const nlohmann::json& tools);

}  // namespace gs::text
