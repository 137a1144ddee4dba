// Running `weft launch` in tests: its "started|restarted TASK pid PID at ADDRESS" lines, whether a
// process is gone, and Launch, a launch that is asked to stop (SIGTERM, which it forwards to every
// process) and waited for when a test ends early, its processes killed if even that fails. For
// tests only; not thread-safe.
#pragma once

#include <cerrno>
#include <csignal>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "weft/testing/child_process.h"

namespace weft::cli::testing {

inline constexpr int64_t kWaitMs = 20000;

// One "weft launch: started|restarted TASK pid PID at ADDRESS" line.
struct Start {
  std::string verb;
  std::string task;
  pid_t pid = -1;
  std::string address;
};

inline std::vector<Start> Starts(const std::string& output) {
  // An elastic launch's restarts say "started ... (restart N)".
  static const std::regex kLine(
      R"(^weft launch: (started|restarted) (\S+) pid (\d+) at (\S+)( \(restart \d+\))?$)");
  std::vector<Start> starts;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (!std::regex_match(line, match, kLine)) continue;
    starts.push_back({match[1], match[2], static_cast<pid_t>(std::stol(match[3])), match[4]});
  }
  return starts;
}

inline Start FindStart(const std::string& output, const std::string& verb,
                       const std::string& task) {
  for (const Start& start : Starts(output)) {
    if (start.verb == verb && start.task == task) return start;
  }
  ADD_FAILURE() << "no '" << verb << " " << task << "' line in:\n" << output;
  return {};
}

// Reaped by the launch: no process has the pid (not even a zombie).
inline bool Gone(pid_t pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

// A `weft launch` run: asks it to stop (SIGTERM, which it forwards to every process) and waits
// for it when a test returns before it exited.
class Launch {
 public:
  explicit Launch(const std::vector<std::string>& argv) {
    StatusOr<std::unique_ptr<weft::testing::ChildProcess>> started =
        weft::testing::ChildProcess::Start(argv);
    EXPECT_TRUE(started.ok()) << started.status();
    if (started.ok()) process_ = std::move(started).value();
  }
  ~Launch() {
    if (process_ == nullptr || exited_) return;
    process_->Signal(SIGTERM);
    if (process_->WaitForExit(kWaitMs).ok()) return;
    // A launch that does not stop has not reaped its children either, so these pids are still
    // theirs; the ChildProcess then kills the launch itself.
    for (const Start& start : Starts(output())) ::kill(start.pid, SIGKILL);
  }

  bool ok() const { return process_ != nullptr; }
  const std::string& output() const { return process_->output(); }
  Status WaitFor(const std::string& text, size_t from = 0, int64_t wait_ms = kWaitMs) {
    return process_->WaitForOutput(text, wait_ms, from);
  }
  int Exit(int64_t wait_ms = kWaitMs) {
    StatusOr<int> code = process_->WaitForExit(wait_ms);
    EXPECT_TRUE(code.ok()) << code.status() << "\n" << output();
    exited_ = code.ok();
    return code.ok() ? *code : -1;
  }

 private:
  std::unique_ptr<weft::testing::ChildProcess> process_;
  bool exited_ = false;
};

inline std::vector<std::string> LaunchArgs(const std::vector<std::string>& flags,
                                           const std::string& chief_script) {
  std::vector<std::string> argv = {WEFT_BINARY, "launch"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", "sh", "-c", chief_script});
  return argv;
}

}  // namespace weft::cli::testing
