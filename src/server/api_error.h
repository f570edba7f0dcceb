// OpenAI-style API errors: an HTTP status and the body {"error": {"message", "type", "code",
// "param"}}, and the mapping from engine/library Status codes.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "core/status.h"

namespace gs::server {

struct ApiError {
  int http_status = 500;
  std::string message;
  std::string type;   // "invalid_request_error", "authentication_error", ...
  std::string code;   // machine-readable: "context_length_exceeded", "invalid_api_key", ...
  std::string param;  // the request field at fault, "" when none
  nlohmann::json extra = nlohmann::json::object();  // more fields inside "error"

  nlohmann::json to_json() const;
  // JSON text; invalid UTF-8 quoted from the input becomes U+FFFD instead of throwing.
  std::string body() const;
};

ApiError bad_request(std::string message, std::string param = "", std::string code = "invalid_value");
ApiError unauthorized(std::string message);
ApiError not_found(std::string message);
// Maps a Status from the engine or the text layer (never kOk):
//   kInvalidArgument -> 400, kOutOfRange -> 400 context_length_exceeded,
//   kResourceExhausted -> 429, kUnavailable -> 503, kNotFound -> 404, others -> 500.
ApiError api_error_from_status(const Status& status);
// The body for a bare HTTP status that no handler filled (404 route, 405, 413, 414, ...).
ApiError api_error_for_http_status(int http_status);

}  // namespace gs::server
