// RunChildren: starts a group of child processes, copies their output with a prefix per line,
// forwards SIGINT/SIGTERM to them, and when one fails stops the others (SIGTERM, then SIGKILL after
// a grace period). Each child is the leader of its own process group, so a signal reaches what it
// started too (`sh -c 'sleep 30'`). Single-threaded; one call at a time per process (it reaps its
// own children by pid and reads signals from the given descriptor).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::cli {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::vector<std::string> env;   // the child's whole environment, "NAME=value"
  std::string prefix;             // put before each line of its stdout and stderr
};

struct RunChildrenOptions {
  // After a failure or a forwarded signal: how long the others get between SIGTERM and SIGKILL.
  // Also how long output is still read after every child has exited.
  int64_t grace_ms = 10000;
  // Readable when a signal arrived: one byte, the signal number. SIGINT and SIGTERM are forwarded;
  // SIGCHLD only wakes the loop. -1: none.
  int signal_fd = -1;
  std::string name = "weft launch";  // begins the lines it writes to stderr itself
};

// Returns the exit code of the first child that failed (its exit status, or 128 + the signal that
// ended it; 127 when it could not be started), or 0 when every child exited with 0. Children's
// stdout goes to fd 1 and stderr to fd 2, line by line.
int RunChildren(const std::vector<ChildSpec>& children, const RunChildrenOptions& options);

}  // namespace weft::cli
