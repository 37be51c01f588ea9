// Status and Result<T>: how every auxstore call reports success or failure.
//
// No exception crosses the public API. A call that can fail returns a Status
// (or a Result<T> carrying either a value or a non-OK Status); the message
// names what was wrong in words an operator can act on.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace auxstore {

// Persisted in the C ABI as integers: never renumber.
enum class StatusCode : int {
  kOk = 0,
  kNotFound = 1,
  kCorruption = 2,
  kInvalidArgument = 3,
  kOutOfRange = 4,  // a size or count beyond what the target can hold
  kCapacity = 5,    // the store or a queue is full; the call was shed
  kIOError = 6,
  kBusy = 7,         // another process or writer holds what was asked for
  kUnavailable = 8,  // the handle cannot serve this now (fenced, read-only, closed)
  kNotSupported = 9,
  kInternal = 10,
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK

  static Status Ok() { return Status(); }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status OutOfRange(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
  static Status Capacity(std::string msg) { return {StatusCode::kCapacity, std::move(msg)}; }
  static Status IOError(std::string msg) { return {StatusCode::kIOError, std::move(msg)}; }
  static Status Busy(std::string msg) { return {StatusCode::kBusy, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status NotSupported(std::string msg) {
    return {StatusCode::kNotSupported, std::move(msg)};
  }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }
  bool IsCorruption() const { return code_ == StatusCode::kCorruption; }
  bool IsInvalidArgument() const { return code_ == StatusCode::kInvalidArgument; }

  // "Corruption: QSA blob truncated ..." — for logs and CLI output.
  std::string ToString() const;

  // The same code with `context` prepended to the message ("layer 3: ...").
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}

  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::string_view StatusCodeName(StatusCode code);

// Either a T or a non-OK Status; shaped like C++23 std::expected<T, Status>.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}        // NOLINT: implicit
  Result(Status status) : v_(std::in_place_index<1>, std::move(status)) {  // NOLINT: implicit
    assert(!std::get<1>(v_).ok() && "a Result built from a Status must carry an error");
    if (std::get<1>(v_).ok()) v_.template emplace<1>(Status::Internal("Result from OK status"));
  }

  bool has_value() const { return v_.index() == 0; }
  bool ok() const { return has_value(); }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The error; OK when a value is held.
  Status status() const { return has_value() ? Status() : std::get<1>(v_); }
  const Status& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace auxstore

// Early-return helpers for implementation files.
#define AUXSTORE_RETURN_IF_ERROR(expr)   \
  do {                                   \
    ::auxstore::Status _aux_st = (expr); \
    if (!_aux_st.ok()) return _aux_st;   \
  } while (0)

#define AUXSTORE_CONCAT_INNER(a, b) a##b
#define AUXSTORE_CONCAT(a, b) AUXSTORE_CONCAT_INNER(a, b)
#define AUXSTORE_ASSIGN_OR_RETURN(lhs, expr) \
  AUXSTORE_ASSIGN_OR_RETURN_IMPL(AUXSTORE_CONCAT(_aux_res_, __LINE__), lhs, expr)
#define AUXSTORE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.error();                   \
  lhs = std::move(tmp).value()
