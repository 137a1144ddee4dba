// Status: the outcome of an operation that can fail, with a canonical code and a message that names
// the thing at fault. Codes follow the reference system's canonical set. Status is a value type;
// copies are cheap (an OK status holds nothing). Safe to pass between threads. StatusCallback is
// the one type of a completion callback; IsDerivedError tells an echo of a failure from its cause.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "weft/core/str_util.h"

namespace weft {

enum class Code : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string_view message);

  static Status OK() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return ok() ? Code::kOk : state_->code; }
  const std::string& message() const;

  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context: `; OK stays OK.
  Status WithContext(std::string_view context) const;

  // Does nothing; marks a deliberately dropped status.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct State {
    Code code;
    std::string message;
  };
  std::shared_ptr<const State> state_;
};

std::ostream& operator<<(std::ostream& out, const Status& status);

// Constructors for each canonical code; arguments are concatenated with StrCat.
#define WEFT_DECLARE_STATUS_FACTORY(Name)                              \
  template <typename... Args>                                          \
  Status Name(Args&&... args) {                                        \
    return Status(Code::k##Name, StrCat(std::forward<Args>(args)...)); \
  }                                                                    \
  inline bool Is##Name(const Status& s) { return s.code() == Code::k##Name; }
WEFT_DECLARE_STATUS_FACTORY(Cancelled)
WEFT_DECLARE_STATUS_FACTORY(Unknown)
WEFT_DECLARE_STATUS_FACTORY(InvalidArgument)
WEFT_DECLARE_STATUS_FACTORY(DeadlineExceeded)
WEFT_DECLARE_STATUS_FACTORY(NotFound)
WEFT_DECLARE_STATUS_FACTORY(AlreadyExists)
WEFT_DECLARE_STATUS_FACTORY(PermissionDenied)
WEFT_DECLARE_STATUS_FACTORY(ResourceExhausted)
WEFT_DECLARE_STATUS_FACTORY(FailedPrecondition)
WEFT_DECLARE_STATUS_FACTORY(Aborted)
WEFT_DECLARE_STATUS_FACTORY(OutOfRange)
WEFT_DECLARE_STATUS_FACTORY(Unimplemented)
WEFT_DECLARE_STATUS_FACTORY(Internal)
WEFT_DECLARE_STATUS_FACTORY(Unavailable)
WEFT_DECLARE_STATUS_FACTORY(DataLoss)
WEFT_DECLARE_STATUS_FACTORY(Unauthenticated)
#undef WEFT_DECLARE_STATUS_FACTORY

// What every asynchronous call (`FooAsync(..., StatusCallback done)`) runs once with its outcome;
// also the type of any other handler that is given a Status (an abort, a cancellation).
using StatusCallback = std::function<void(const Status&)>;

// Whether `status` is "derived", as the reference calls an error that usually follows from another
// failure (Cancelled: the step was cancelled; Aborted: a rendezvous or collective was aborted).
// Where several errors arrive, the root cause is reported in preference to a derived one.
inline bool IsDerivedError(const Status& status) {
  return IsCancelled(status) || IsAborted(status);
}

}  // namespace weft

#define WEFT_STATUS_CONCAT_INNER(a, b) a##b
#define WEFT_STATUS_CONCAT(a, b) WEFT_STATUS_CONCAT_INNER(a, b)

// Returns from the enclosing function when `expr` yields a non-OK Status.
#define WEFT_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::weft::Status weft_status_ = (expr);        \
    if (!weft_status_.ok()) return weft_status_; \
  } while (false)

// Evaluates a StatusOr<T> expression; on error returns its status, else assigns the value to `lhs`.
#define WEFT_ASSIGN_OR_RETURN(lhs, expr) \
  WEFT_ASSIGN_OR_RETURN_IMPL(WEFT_STATUS_CONCAT(weft_statusor_, __LINE__), lhs, expr)
#define WEFT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
