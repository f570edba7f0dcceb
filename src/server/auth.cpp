// API key loading and constant-time checking.
#include "server/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cctype>
#include <fstream>

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

}  // namespace

Result<ApiKeys> ApiKeys::from_keys(const std::vector<std::string>& keys) {
  ApiKeys out;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& k = keys[i];
    if (k.empty()) return make_status(StatusCode::kInvalidArgument, "API key {} is empty", i + 1);
    for (char c : k) {
      const auto u = static_cast<unsigned char>(c);
      if (u <= 0x20 || u == 0x7f) {
        return make_status(StatusCode::kInvalidArgument, "API key {} contains whitespace or a control character", i + 1);
      }
    }
    out.digests_.push_back(digest_of(k));
  }
  return out;
}

Result<ApiKeys> ApiKeys::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_status(StatusCode::kIo, "cannot read the API key file {}", path);
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(in, line)) {
    std::string_view t = trim(line);
    if (t.empty() || t.front() == '#') continue;
    keys.emplace_back(t);
  }
  if (keys.empty()) return make_status(StatusCode::kInvalidArgument, "the API key file {} holds no key", path);
  return from_keys(keys);
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
