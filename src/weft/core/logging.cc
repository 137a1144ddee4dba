#include "weft/core/logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace weft::internal {
namespace {

int InitialMinLogLevel() {
  const char* env = std::getenv("WEFT_MIN_LOG_LEVEL");
  return env == nullptr ? 0 : std::atoi(env);
}

std::atomic<int>& MinLogLevel() {
  static std::atomic<int> level{InitialMinLogLevel()};
  return level;
}

const char* SeverityLetter(LogSeverity severity) {
  switch (severity) {
    case LogSeverity::kInfo:
      return "I";
    case LogSeverity::kWarning:
      return "W";
    case LogSeverity::kError:
      return "E";
    case LogSeverity::kFatal:
      return "F";
  }
  return "?";
}

}  // namespace

void SetMinLogLevel(int level) { MinLogLevel().store(level); }

LogMessage::LogMessage(const char* file, int line, LogSeverity severity) : severity_(severity) {
  const char* base = std::strrchr(file, '/');
  stream_ << SeverityLetter(severity) << " " << (base ? base + 1 : file) << ":" << line << "] ";
}

LogMessage::~LogMessage() {
  if (severity_ == LogSeverity::kFatal || static_cast<int>(severity_) >= MinLogLevel().load()) {
    stream_ << '\n';
    std::string text = stream_.str();
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
  }
  // A failed CHECK is an internal invariant broken inside Weft: stop before corrupting state.
  if (severity_ == LogSeverity::kFatal) std::abort();
}

}  // namespace weft::internal
