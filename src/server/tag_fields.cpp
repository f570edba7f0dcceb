// Type checks of the request-tagging fields (user, metadata, service_tier, ...) and of the
// hints taken without effect (store, verbosity, reasoning.summary).
#include "server/tag_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "server/json_input.h"

namespace gs::server {

namespace {

using nlohmann::json;

// OpenAI's limits on metadata (its API reference: "Set of 16 key-value pairs ... Keys are
// strings with a maximum length of 64 characters. Values are strings with a maximum length of
// 512 characters.").
constexpr size_t kMaxMetadataPairs = 16;
constexpr size_t kMaxMetadataKeyChars = 64;
constexpr size_t kMaxMetadataValueChars = 512;

Status invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

constexpr std::string_view kChatTagFields[] = {"service_tier", "prompt_cache_key", "prompt_cache_retention",
                                               "safety_identifier", "store", "verbosity", "prediction"};

// "a, b or c".
std::string one_of(std::span<const std::string_view> allowed) {
  std::string names;
  for (size_t i = 0; i < allowed.size(); ++i) {
    names += i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ";
    names += allowed[i];
  }
  return names;
}

// A top-level field that is absent, null or a string.
Status check_string(const json& obj, const char* key, bool null_named) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null() || it->is_string()) return {};
  return invalid(fmt::format("{} must be a string{}, got {}", key, null_named ? " or null" : "", json_type_name(*it)));
}

constexpr std::string_view kVerbosities[] = {"low", "medium", "high"};

// Code points in valid UTF-8 (parse_json_object refuses any other): the bytes that do not
// continue a sequence.
size_t code_points(std::string_view s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

// A string field that is absent, null or one of `allowed`.
Status read_choice(const json& obj, std::string_view path, const char* key, std::span<const std::string_view> allowed) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  if (!it->is_string()) {
    return invalid(fmt::format("{} must be {} (a string) or null, got {}", field_name(path, key), one_of(allowed),
                               json_type_name(*it)));
  }
  const std::string& v = it->get_ref<const std::string&>();
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return {};
  return invalid(fmt::format("{} must be {}, got '{}'", field_name(path, key), one_of(allowed), v));
}

Status check_openai_user(const json& body) {
  std::optional<std::string> user;
  return read_string(body, "", "user", &user);
}

Status check_openai_metadata(const json& body) {
  const auto it = body.find("metadata");
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_object()) {
    return invalid(fmt::format("metadata must be an object of string values, got {}", json_type_name(*it)));
  }
  if (it->size() > kMaxMetadataPairs) {
    return invalid(fmt::format("metadata may hold at most {} key-value pairs, got {}", kMaxMetadataPairs, it->size()));
  }
  for (const auto& [key, value] : it->items()) {
    if (code_points(key) > kMaxMetadataKeyChars) {
      return invalid(fmt::format("metadata keys may hold at most {} characters, got one of {}", kMaxMetadataKeyChars,
                                 code_points(key)));
    }
    // The key is shown after the field only where it reads as a path ("metadata.tier").
    const bool plain = !key.empty() && key.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789_") == std::string::npos &&
                       !(key[0] >= '0' && key[0] <= '9');
    const std::string where = plain ? fmt::format("metadata.{}", key) : fmt::format("metadata: the value of key \"{}\"", key);
    if (!value.is_string()) return invalid(fmt::format("{} must be a string, got {}", where, json_type_name(value)));
    const size_t n = code_points(value.get_ref<const std::string&>());
    if (n > kMaxMetadataValueChars) {
      return invalid(fmt::format("{} must hold at most {} characters, got {}", where, kMaxMetadataValueChars, n));
    }
  }
  return {};
}

Status check_anthropic_metadata(const json& body) {
  const auto it = body.find("metadata");
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_object()) return invalid(fmt::format("metadata must be an object, got {}", json_type_name(*it)));
  const auto user_id = it->find("user_id");
  if (user_id != it->end() && !user_id->is_null() && !user_id->is_string()) {
    return invalid(fmt::format("metadata.user_id must be a string or null, got {}", json_type_name(*user_id)));
  }
  return {};
}

Status check_openai_tags(const json& body) {
  GS_RETURN_IF_ERROR(check_string(body, "service_tier", /*null_named=*/true));
  GS_RETURN_IF_ERROR(check_string(body, "prompt_cache_key", /*null_named=*/false));
  // OpenAI's API names "in_memory" and "24h"; its SDKs sent "in-memory" for a while.
  constexpr std::string_view kRetentions[] = {"in_memory", "in-memory", "24h"};
  GS_RETURN_IF_ERROR(read_choice(body, "", "prompt_cache_retention", kRetentions));
  return check_string(body, "safety_identifier", /*null_named=*/false);
}

// OpenAI's `prediction` (Predicted Outputs): {"type": "content", "content": a string or an
// array of text parts}. A latency hint: the answer is the same without it.
Status check_prediction(const json& body) {
  const auto it = body.find("prediction");
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_object()) return invalid(fmt::format("prediction must be an object, got {}", json_type_name(*it)));
  const auto type = it->find("type");
  if (type == it->end() || type->is_null()) return invalid("prediction.type is required ('content')");
  if (!type->is_string() || *type != "content") {
    return invalid(fmt::format("prediction.type must be 'content', got {}", type->dump(-1, ' ', false, json::error_handler_t::replace)));
  }
  const auto content = it->find("content");
  if (content == it->end() || content->is_null()) {
    return invalid("prediction.content is required (a string or an array of text parts)");
  }
  if (content->is_string()) return {};
  if (!content->is_array()) {
    return invalid(fmt::format("prediction.content must be a string or an array of text parts, got {}",
                               json_type_name(*content)));
  }
  for (size_t i = 0; i < content->size(); ++i) {
    const json& part = (*content)[i];
    const std::string path = fmt::format("prediction.content[{}]", i);
    if (!part.is_object()) return invalid(fmt::format("{} must be a text part, got {}", path, json_type_name(part)));
    const auto part_type = part.find("type");
    if (part_type == part.end() || !part_type->is_string() || *part_type != "text") {
      return invalid(fmt::format("{}.type must be 'text'", path));
    }
    const auto text = part.find("text");
    if (text == part.end() || !text->is_string()) return invalid(fmt::format("{}.text must be a string", path));
  }
  return {};
}

Status check_chat_hints(const json& body) {
  std::optional<bool> store;
  GS_RETURN_IF_ERROR(read_bool(body, "", "store", &store));
  GS_RETURN_IF_ERROR(read_choice(body, "", "verbosity", kVerbosities));
  return check_prediction(body);
}

Status check_responses_hints(const json& body) {
  if (const auto text = body.find("text"); text != body.end() && text->is_object()) {
    GS_RETURN_IF_ERROR(read_choice(*text, "text", "verbosity", kVerbosities));
  }
  if (const auto reasoning = body.find("reasoning"); reasoning != body.end() && reasoning->is_object()) {
    constexpr std::string_view kSummaries[] = {"auto", "concise", "detailed"};
    GS_RETURN_IF_ERROR(read_choice(*reasoning, "reasoning", "summary", kSummaries));
  }
  return {};
}

Status check_anthropic_service_tier(const json& body) {
  constexpr std::string_view kTiers[] = {"auto", "standard_only"};
  return read_choice(body, "", "service_tier", kTiers);
}

std::span<const std::string_view> chat_tag_field_names() { return kChatTagFields; }

}  // namespace gs::server
