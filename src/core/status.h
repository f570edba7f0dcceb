// Error values (Status, Result<T>) used across every library boundary instead of exceptions.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace gs {

enum class StatusCode : uint8_t {
  kOk,
  kInvalidArgument,     // caller passed something malformed
  kNotFound,            // a named thing (key, tensor, file) is absent
  kOutOfRange,          // an index or size beyond a limit
  kDataLoss,            // a file's bytes are malformed or truncated
  kResourceExhausted,   // memory, queue or context full
  kUnimplemented,       // valid but not supported by this build
  kFailedPrecondition,  // state does not allow the call
  kCancelled,           // the request was cancelled
  kUnavailable,         // transient: try again later
  kInternal,            // a bug: an invariant broke
  kIo,                  // the operating system refused a file operation
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "CODE: message", for logs and CLI errors.
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Args>
Status make_status(StatusCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}

// A value or an error. Access to value() on an error is a bug (checked).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}   // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace gs

#define GS_CONCAT_INNER(a, b) a##b
#define GS_CONCAT(a, b) GS_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is an error.
#define GS_RETURN_IF_ERROR(expr)                  \
  do {                                            \
    ::gs::Status gs_status_ = (expr);             \
    if (!gs_status_.ok()) return gs_status_;      \
  } while (0)

// `lhs = value of expr` or return its Status.
#define GS_ASSIGN_OR_RETURN(lhs, expr) GS_ASSIGN_OR_RETURN_IMPL(GS_CONCAT(gs_result_, __LINE__), lhs, expr)
#define GS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
