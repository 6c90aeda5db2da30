// Status and Result<T>: how every fallible function in tpufleet reports failure.
//
// A Status is a code plus a message. The code says what the caller should do next
// (retry, give up, ask the user), not where the failure came from: the HTTP, SQLite
// and SSH layers map their own errors into these codes at their boundary, so no
// library type leaks upward. OK carries no message and costs nothing to return.
//
// Result<T> holds either a T or a non-OK Status. Errors are passed up with
// TPUFLEET_TRY / TPUFLEET_ASSIGN_OR_RETURN. Exceptions are reserved for
// "print and exit" in main (see FatalError in cli).
//
// Thread-safety: plain values; a const Status or Result may be read from any thread.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tpufleet {

enum class StatusCode {
  kOk = 0,
  kNotFound,            // the thing asked for does not exist
  kInvalidArgument,     // bad input from the user: fix it and run again
  kUnavailable,         // transient (HTTP 429/503, connection refused): retry with backoff
  kTimeout,             // a deadline passed: retry or give up
  kPermissionDenied,    // credentials or IAM: ask the user
  kFailedPrecondition,  // the world is not in a state that allows this (quota): stop
  kResourceExhausted,   // no capacity where asked (a stockout): try another place or later
  kAlreadyExists,       // what was to be created exists already: adopt it or pick a new name
  kInternal,            // a bug or an impossible state
};

/// The lower-case name of a code, as printed in messages and --json ("not_found").
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// A copy of this status with `context` prefixed to its message: "context: message".
  Status WithContext(std::string_view context) const;

  /// "ok" or "<code name>: <message>".
  std::string ToString() const;

  bool operator==(const Status& other) const = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status InvalidArgumentError(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status TimeoutError(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
inline Status PermissionDeniedError(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
inline Status FailedPreconditionError(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status ResourceExhaustedError(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status AlreadyExistsError(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design, like std::optional
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an OK Status has no value");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  /// OK when a value is held, else the error.
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  // REQUIRES: ok()
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

namespace internal {
inline Status AsStatus(const Status& s) { return s; }
template <typename T>
Status AsStatus(const Result<T>& r) { return r.status(); }
}  // namespace internal

}  // namespace tpufleet

#define TPUFLEET_CONCAT_INNER(a, b) a##b
#define TPUFLEET_CONCAT(a, b) TPUFLEET_CONCAT_INNER(a, b)

/// Returns the error of `expr` (a Status or Result) from the enclosing function.
/// The temporary's name is unique per use (__COUNTER__), so a TRY inside a lambda
/// passed to another TRY does not shadow it.
#define TPUFLEET_TRY(expr) TPUFLEET_TRY_IMPL(TPUFLEET_CONCAT(tpufleet_try_s_, __COUNTER__), expr)
#define TPUFLEET_TRY_IMPL(tmp, expr)                                  \
  do {                                                                \
    if (auto tmp = ::tpufleet::internal::AsStatus(expr); !tmp.ok()) { \
      return tmp;                                                     \
    }                                                                 \
  } while (false)

/// `lhs = value of rexpr`, or return its error. lhs may declare: `auto x`.
#define TPUFLEET_ASSIGN_OR_RETURN(lhs, rexpr) \
  TPUFLEET_ASSIGN_OR_RETURN_IMPL(TPUFLEET_CONCAT(tpufleet_r_, __COUNTER__), lhs, rexpr)
#define TPUFLEET_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                   \
  if (!tmp.ok()) {                                      \
    return tmp.status();                                \
  }                                                     \
  lhs = std::move(tmp).value()
