// Minimal logging: WEFT_LOG(INFO|WARNING|ERROR) << ...; and WEFT_CHECK(cond) << ... for internal
// invariants only (a failed CHECK is a bug in Weft, never a user error). Thread-safe: each message
// is written with one call.
#pragma once

#include <sstream>
#include <string_view>

namespace weft::internal {

enum class LogSeverity { kInfo, kWarning, kError, kFatal };

class LogMessage {
 public:
  LogMessage(const char* file, int line, LogSeverity severity);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogSeverity severity_;
  std::ostringstream stream_;
};

// Turns `LogMessage(...).stream() << x` into a void expression so it can sit in a ternary.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

// Sets the lowest severity printed (0 info, 1 warning, 2 error). Default: from WEFT_MIN_LOG_LEVEL,
// or 0.
void SetMinLogLevel(int level);

}  // namespace weft::internal

#define WEFT_LOG_INFO ::weft::internal::LogSeverity::kInfo
#define WEFT_LOG_WARNING ::weft::internal::LogSeverity::kWarning
#define WEFT_LOG_ERROR ::weft::internal::LogSeverity::kError
#define WEFT_LOG(severity) \
  ::weft::internal::LogMessage(__FILE__, __LINE__, WEFT_LOG_##severity).stream()

#define WEFT_CHECK(condition)                                                           \
  (condition) ? (void)0                                                                 \
              : ::weft::internal::LogVoidify() &                                        \
                    ::weft::internal::LogMessage(__FILE__, __LINE__,                    \
                                                 ::weft::internal::LogSeverity::kFatal) \
                            .stream()                                                   \
                        << "Check failed: " #condition " "
