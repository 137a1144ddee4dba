// RunChildren, RunWithServices and RunElastic: start a group of child processes, copy their output
// with a prefix per line, forward SIGINT/SIGTERM to them, and stop them (SIGTERM, then SIGKILL
// after a grace period) when the group ends: RunChildren's and RunElastic's at the first failure,
// RunWithServices's when its main child exits. Each child is the leader of its own process group,
// so a signal reaches what it started too (`sh -c 'sleep 30'`). Both return only once every child
// they started is reaped. Single-threaded; one call at a time per process (it reaps its own
// children by pid and reads signals from the given descriptor).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace weft::cli {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::vector<std::string> env;   // the child's whole environment, "NAME=value"
  std::string prefix;             // put before each line of its stdout and stderr
  // How the group's own lines on stderr name it ("ps:1"); "" names it by its prefix ("[worker 1]").
  std::string name;
};

struct RunChildrenOptions {
  // After a failure or a forwarded signal: how long the others get between SIGTERM and SIGKILL.
  // Also how long output is still read after every child has exited.
  int64_t grace_ms = 10000;
  // Readable when a signal arrived: one byte, the signal number. SIGINT and SIGTERM are forwarded;
  // SIGCHLD only wakes the loop (so a child's exit is seen at once). -1: none.
  int signal_fd = -1;
  std::string name = "weft launch";  // begins the lines it writes to stderr itself
  // Called after every start of a child, restarts included, with its index in the group
  // (RunWithServices: the services in order, then the main child), its pid and how many times it
  // had been started before (0 the first time). Empty: nothing is called.
  std::function<void(size_t child, pid_t pid, int restarts)> on_start;
  // RunElastic: called after every exit of a worker (lost, finished or failed) with its index and
  // its wait status, before any restart. Empty: nothing is called.
  std::function<void(size_t child, int wait_status)> on_exit;
};

// Returns the exit code of the first child that failed (its exit status, or 128 + the signal that
// ended it; 127 when it could not be started), or 0 when every child exited with 0. Children's
// stdout goes to fd 1 and stderr to fd 2, line by line.
int RunChildren(const std::vector<ChildSpec>& children, const RunChildrenOptions& options);

// A child that runs for the main child of RunWithServices (a server of a parameter-server job).
struct ServiceSpec {
  ChildSpec child;
  // How many times it is started again, from the same spec, after exiting while the main child
  // runs. 0: its exit is only reported.
  int max_restarts = 0;
};

// Starts `services` in order, then `main`. A service that exits while main runs is reported on
// stderr ("ps:1 (pid P) exited with code C", or "with signal S (Killed)") and started again while
// it has restarts left ("giving up on ps:1 ..." once it has none); main keeps running either way,
// since noticing a lost service is main's business. Main's exit, any way, ends the group: every
// service gets SIGTERM, then SIGKILL after the grace, so none outlives it. Returns main's exit
// code (128 + the signal that ended it), or 127 when a child could not be started (the ones
// already started are then stopped the same way).
int RunWithServices(const ChildSpec& main, const std::vector<ServiceSpec>& services,
                    const RunChildrenOptions& options);

// The workers of an elastic job: a worker that a signal ends (killed, crashed) is lost, not a
// failure of the group: it is reported ("worker 1 (pid P) lost: signal 9 (Killed)") and
// started again from the same spec while it has restarts left (max_restarts
// each); the others go on. A worker that exits with a non-zero code fails the group as in
// RunChildren (the others are stopped). options.on_exit hears of every exit. Returns 0 once every
// worker has exited and at least one exited with 0 and none failed; else the failing code, or 128 +
// the signal of the last worker lost when none finished.
int RunElastic(const std::vector<ChildSpec>& workers, int max_restarts,
               const RunChildrenOptions& options);

}  // namespace weft::cli
