// API key loading and constant-time checking.
#include "server/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cctype>
#include <fstream>

#include <fmt/format.h>

namespace gs::server {

namespace {

std::array<unsigned char, 32> digest_of(std::string_view s) {
  std::array<unsigned char, 32> d{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
  return d;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Why `key` cannot be an API key, or "" when it can: it must be printable ASCII without
// spaces, the bytes every HTTP client sends as they are written (the OpenAI and Anthropic
// SDKs refuse header values outside ASCII, others re-encode them, so such a key never matches).
std::string key_fault(std::string_view key) {
  if (key.empty()) return "is empty";
  for (char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return "contains whitespace or a control character";
    if (u >= 0x80) {
      return fmt::format("contains the byte 0x{:02X}: keys are printable ASCII (clients cannot send other bytes as they are)", u);
    }
  }
  return {};
}

}  // namespace

Result<ApiKeys> ApiKeys::from_keys(const std::vector<std::string>& keys) {
  ApiKeys out;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string fault = key_fault(keys[i]);
    if (!fault.empty()) return make_status(StatusCode::kInvalidArgument, "API key {} {}", i + 1, fault);
    out.digests_.push_back(digest_of(keys[i]));
  }
  return out;
}

Result<ApiKeys> ApiKeys::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_status(StatusCode::kIo, "cannot read the API key file {}", path);
  ApiKeys out;
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    std::string_view t = line;
    // A UTF-8 byte order mark (Windows editors begin a file with one) is no part of the key.
    constexpr std::string_view kBom = "\xEF\xBB\xBF";
    if (line_no == 1 && t.substr(0, kBom.size()) == kBom) t.remove_prefix(kBom.size());
    t = trim(t);
    if (t.empty() || t.front() == '#') continue;
    const std::string fault = key_fault(t);
    if (!fault.empty()) {
      return make_status(StatusCode::kInvalidArgument, "the API key file {}: the key on line {} {}", path, line_no,
                         fault);
    }
    out.digests_.push_back(digest_of(t));
  }
  if (out.digests_.empty()) return make_status(StatusCode::kInvalidArgument, "the API key file {} holds no key", path);
  return out;
}

bool ApiKeys::matches(std::string_view key) const {
  if (key.empty()) return false;
  const auto d = digest_of(key);
  int found = 0;
  for (const auto& k : digests_) found |= (CRYPTO_memcmp(k.data(), d.data(), d.size()) == 0) ? 1 : 0;
  return found != 0;
}

namespace {

// The token of "Bearer <token>" (scheme case-insensitive), "" for any other value.
std::string_view bearer_token(std::string_view authorization) {
  std::string_view a = trim(authorization);
  constexpr std::string_view kBearer = "bearer";
  if (a.size() <= kBearer.size()) return {};
  for (size_t i = 0; i < kBearer.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != kBearer[i]) return {};
  }
  if (!std::isspace(static_cast<unsigned char>(a[kBearer.size()]))) return {};
  return trim(a.substr(kBearer.size()));
}

}  // namespace

std::string_view ApiKeys::presented_key(std::string_view authorization, std::string_view x_api_key) {
  const std::string_view token = bearer_token(authorization);
  return token.empty() ? trim(x_api_key) : token;
}

bool ApiKeys::matches_either(std::string_view authorization, std::string_view x_api_key) const {
  const bool by_bearer = matches(bearer_token(authorization));
  const bool by_header = matches(trim(x_api_key));
  return by_bearer || by_header;
}

}  // namespace gs::server
