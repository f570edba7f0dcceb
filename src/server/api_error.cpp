// OpenAI-style error bodies and the Status -> HTTP mapping.
#include "server/api_error.h"

namespace gs::server {

nlohmann::json ApiError::to_json() const {
  nlohmann::json err = extra;
  err["message"] = message;
  err["type"] = type;
  err["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
  err["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  return nlohmann::json{{"error", std::move(err)}};
}

std::string ApiError::body() const {
  return to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError bad_request(std::string message, std::string param, std::string code) {
  ApiError e;
  e.http_status = 400;
  e.message = std::move(message);
  e.type = "invalid_request_error";
  e.code = std::move(code);
  e.param = std::move(param);
  return e;
}

ApiError unauthorized(std::string message) {
  ApiError e;
  e.http_status = 401;
  e.message = std::move(message);
  e.type = "authentication_error";
  e.code = "invalid_api_key";
  return e;
}

ApiError not_found(std::string message) {
  ApiError e;
  e.http_status = 404;
  e.message = std::move(message);
  e.type = "not_found_error";
  e.code = "not_found";
  return e;
}

ApiError api_error_from_status(const Status& status) {
  ApiError e;
  e.message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return bad_request(status.message());
    case StatusCode::kOutOfRange:
      e.http_status = 400;
      e.type = "invalid_request_error";
      e.code = "context_length_exceeded";
      e.param = "messages";
      return e;
    case StatusCode::kResourceExhausted:
      e.http_status = 429;
      e.type = "rate_limit_error";
      e.code = "server_busy";
      return e;
    case StatusCode::kUnavailable:
      e.http_status = 503;
      e.type = "unavailable_error";
      e.code = "unavailable";
      return e;
    case StatusCode::kNotFound:
      e.http_status = 404;
      e.type = "not_found_error";
      e.code = "not_found";
      return e;
    case StatusCode::kUnimplemented:
      return bad_request(status.message(), "", "unsupported");
    case StatusCode::kCancelled:
      e.http_status = 499;
      e.type = "cancelled";
      e.code = "cancelled";
      return e;
    case StatusCode::kOk:
    case StatusCode::kDataLoss:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kInternal:
    case StatusCode::kIo:
      e.http_status = 500;
      e.type = "server_error";
      e.code = "internal_error";
      return e;
  }
  e.http_status = 500;
  e.type = "server_error";
  return e;
}

ApiError api_error_for_http_status(int http_status) {
  ApiError e;
  e.http_status = http_status;
  switch (http_status) {
    case 400: e.message = "malformed HTTP request"; e.type = "invalid_request_error"; break;
    case 404: e.message = "no such route"; e.type = "not_found_error"; e.code = "not_found"; break;
    case 405: e.message = "method not allowed on this route"; e.type = "invalid_request_error"; break;
    case 413:
      e.message = "the request body is larger than this server accepts (see --max-body-bytes)";
      e.type = "invalid_request_error";
      e.code = "request_too_large";
      break;
    case 414: e.message = "the request URI is too long"; e.type = "invalid_request_error"; break;
    case 416: e.message = "range not satisfiable"; e.type = "invalid_request_error"; break;
    default:
      e.message = http_status >= 500 ? "internal server error" : "request failed";
      e.type = http_status >= 500 ? "server_error" : "invalid_request_error";
      break;
  }
  return e;
}

}  // namespace gs::server
