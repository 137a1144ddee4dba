// ChildProcess: a real child process for multi-process tests (`weft train` workers), its stdout
// and stderr gathered through one pipe. Start() spawns it with extra environment variables;
// WaitForOutput() reads until a text appears; WaitForExit() reads everything until the child
// exits and reaps it; the destructor kills (SIGKILL) and reaps a child still running, so no test
// leaves one behind. Not thread-safe; one owner.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "weft/core/statusor.h"

namespace weft::testing {

class ChildProcess {
 public:
  // `argv[0]` is the binary; `env` is added to (and overrides) this process's environment.
  static StatusOr<std::unique_ptr<ChildProcess>> Start(
      const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Everything the child printed so far.
  const std::string& output() const { return output_; }

  // Reads until `text` appears in the output at or after byte `from` (so a caller can wait for a
  // line's next occurrence); DeadlineExceeded quoting the output otherwise.
  Status WaitForOutput(const std::string& text, int64_t timeout_ms, size_t from = 0);
  // Reads the output to its end and reaps the child: its exit code, or 128 + the signal that
  // killed it; DeadlineExceeded (child left running) when it does not exit in time.
  StatusOr<int> WaitForExit(int64_t timeout_ms);
  // Sends `signal`; no-op once reaped.
  void Signal(int signal);

 private:
  ChildProcess(pid_t pid, int output_fd) : pid_(pid), output_fd_(output_fd) {}
  // Reads what is available within `timeout_ms`; false at end of output.
  bool ReadSome(int64_t timeout_ms);

  pid_t pid_;
  int output_fd_;
  bool output_ended_ = false;
  bool reaped_ = false;
  std::string output_;
};

}  // namespace weft::testing
