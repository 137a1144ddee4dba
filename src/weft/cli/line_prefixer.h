// LinePrefixer: turns a child process's output, arriving in arbitrary chunks, into whole lines each
// starting with a prefix ("[worker 1] "), so that the lines of several children never mix. A line
// longer than kMaxLineBytes is cut there. Not thread-safe: one per stream.
#pragma once

#include <string>
#include <string_view>

namespace weft::cli {

class LinePrefixer {
 public:
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  explicit LinePrefixer(std::string prefix) : prefix_(std::move(prefix)) {}

  // Takes the next bytes; returns the lines they complete, prefixed and ending in '\n'.
  std::string Feed(std::string_view bytes);
  // At end of stream: the last line if it had no '\n' (given one), else "".
  std::string Finish();

 private:
  std::string prefix_;
  std::string partial_;
};

}  // namespace weft::cli
