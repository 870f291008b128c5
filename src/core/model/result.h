#pragma once
// Results are values: an operation either gives its value or an Error that says what was wrong, where, and
// what is allowed. Error codes map to HTTP statuses at the server's edge; exceptions never cross modules.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace allot {

enum class ErrorCode {
  kInvalidArgument,  // the input is malformed or out of range (HTTP 400)
  kNotFound,         // a named object does not exist (HTTP 404)
  kAlreadyExists,    // a name is taken (HTTP 409)
  kFailedPrecondition,  // the object is in a state that does not allow this (HTTP 409)
  kInternal,         // a bug or an I/O failure (HTTP 500)
  kUnauthenticated,  // no credentials, or ones that are not valid (HTTP 401)
  kPermissionDenied,  // valid credentials that do not allow this (HTTP 403)
};

// Why an error happened, as data, for the few errors a program decides on (a plan's node waits for its plan
// instead of giving up); most errors have none, and people read the message. Sent in the API's error object as
// "reason" (docs/api.md).
enum class ErrorReason : uint8_t {
  kNone,
  kPlanNotStarted,  // a plan's node registered before its plan is Active: it may try again later
};
const char* error_reason_name(ErrorReason reason);
ErrorReason parse_error_reason(std::string_view name);  // kNone for a name this version does not know

struct Error {
  ErrorCode code = ErrorCode::kInvalidArgument;
  std::string message;
  ErrorReason reason = ErrorReason::kNone;

  static Error invalid(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
  static Error not_found(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
  static Error exists(std::string m) { return {ErrorCode::kAlreadyExists, std::move(m)}; }
  static Error precondition(std::string m) { return {ErrorCode::kFailedPrecondition, std::move(m)}; }
  static Error internal(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }
  static Error unauthenticated(std::string m) { return {ErrorCode::kUnauthenticated, std::move(m)}; }
  static Error denied(std::string m) { return {ErrorCode::kPermissionDenied, std::move(m)}; }
};

int http_status(ErrorCode code);
const char* error_code_name(ErrorCode code);

// A small std::expected stand-in (g++ 12 has no <expected>).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit on purpose, like std::expected
  Result(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace allot
