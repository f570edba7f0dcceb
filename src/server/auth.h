// API keys: loading them (a file keeps them out of `ps`), and checking a request's
// `Authorization: Bearer KEY` or `x-api-key: KEY` header in constant time.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace gs::server {

class ApiKeys {
 public:
  ApiKeys() = default;
  // Keys are printable ASCII without spaces. Errors: kInvalidArgument for an empty key, or one
  // with whitespace, a control character or a byte outside ASCII (which clients cannot send).
  static Result<ApiKeys> from_keys(const std::vector<std::string>& keys);
  // One key per line; blank lines and lines starting with '#' are skipped; surrounding
  // whitespace (a CR too) trimmed; a UTF-8 byte order mark at the file's start skipped.
  // Errors: kIo (unreadable), kInvalidArgument (no key in the file, or a key that is not
  // printable ASCII, naming the file and its line).
  static Result<ApiKeys> from_file(const std::string& path);

  bool enabled() const { return !digests_.empty(); }
  size_t size() const { return digests_.size(); }
  // True when `key` is one of the keys. Every key is compared (SHA-256 digests with
  // CRYPTO_memcmp), so the time taken says nothing about how much of a key matched.
  bool matches(std::string_view key) const;
  // The key a request presents: the token of "Authorization: Bearer <token>" (scheme
  // case-insensitive), else the x-api-key header; "" when neither is present.
  static std::string_view presented_key(std::string_view authorization, std::string_view x_api_key);
  // True when either header holds one of the keys: the bearer token of `authorization`, or
  // `x_api_key`. Both are checked whatever the first gives (so the time taken does not say
  // which matched); a client that sends its key in one and something else in the other
  // (an Anthropic SDK given a key and a bearer token) is let in.
  bool matches_either(std::string_view authorization, std::string_view x_api_key) const;

 private:
  std::vector<std::array<unsigned char, 32>> digests_;
};

}  // namespace gs::server
