// Type checks of the request-tagging fields (user, metadata).
#include "server/tag_fields.h"

#include <fmt/format.h>

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

// Code points in valid UTF-8 (parse_json_object refuses any other): the bytes that do not
// continue a sequence.
size_t code_points(std::string_view s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

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

}  // namespace gs::server
