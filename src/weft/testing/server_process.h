// ServerProcess: a real `weft server` child process for multi-process tests. Start() runs the
// binary with the given flags, reads its stdout until the "weft server listening on HOST:PORT" line
// (so the test learns an ephemeral port) and returns; the destructor kills it (SIGKILL) and reaps
// it, so no test leaves a server behind. Not thread-safe; one owner.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "weft/core/statusor.h"

namespace weft::testing {

class ServerProcess {
 public:
  // DeadlineExceeded when the line does not come within `timeout_ms`; the error quotes what the
  // server printed.
  static StatusOr<std::unique_ptr<ServerProcess>> Start(const std::string& binary,
                                                        const std::vector<std::string>& flags,
                                                        int64_t timeout_ms = 20000);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // The rest of the next stdout line holding `prefix` ("127.0.0.1:PORT/metrics" for "weft server
  // metrics at http://"); lines before it are skipped. DeadlineExceeded quoting what the server
  // printed when no such line comes within `timeout_ms`.
  StatusOr<std::string> ReadLineAfter(std::string_view prefix, int64_t timeout_ms);

  // "127.0.0.1:PORT" from the listening line.
  const std::string& address() const { return address_; }
  std::string target() const { return "grpc://" + address_; }
  pid_t pid() const { return pid_; }

  // Sends `signal`; no-op once the process has been reaped.
  void Signal(int signal);
  // Waits up to `timeout_ms` for the process to exit and reaps it; its exit code, or 128 + the
  // signal that killed it; DeadlineExceeded when it is still running.
  StatusOr<int> WaitForExit(int64_t timeout_ms);

 private:
  ServerProcess(pid_t pid, int stdout_fd, std::vector<std::string> flags)
      : pid_(pid), stdout_fd_(stdout_fd), flags_(std::move(flags)) {}
  pid_t pid_;
  int stdout_fd_;  // kept open: a server writing to a closed pipe would die of SIGPIPE
  const std::vector<std::string> flags_;  // for errors
  bool reaped_ = false;
  std::string address_;
  std::string printed_;  // its stdout so far
  size_t consumed_ = 0;  // printed_ up to here has been matched
};

// A TCP port on 127.0.0.1 that nothing listens on right now (bound, then released), below the
// kernel's ephemeral range where it can (net::PickFreePorts): a port from that range may become
// some other test's outgoing connection's local port before the child listens on it.
int UnusedLoopbackPort();

// `count` distinct such ports.
std::vector<int> UnusedLoopbackPorts(int count);

// The WEFT_CONFIG of task `task` in a cluster of one "worker" job on 127.0.0.1:`ports`.
std::string LoopbackWorkerConfig(const std::vector<int>& ports, int task);

// An ephemeral port on 127.0.0.1 held by a listening socket that serves nobody, so that a test can
// see someone try to reach the port (a master waiting for a late worker) before a real server
// takes it over. Not thread-safe; one owner.
class HeldLoopbackPort {
 public:
  HeldLoopbackPort();  // port() is 0 when no socket could be bound
  ~HeldLoopbackPort() { Release(); }
  HeldLoopbackPort(const HeldLoopbackPort&) = delete;
  HeldLoopbackPort& operator=(const HeldLoopbackPort&) = delete;

  int port() const { return port_; }
  // Whether a connection came within `timeout_ms`; it is accepted and closed at once.
  bool WaitForConnection(int64_t timeout_ms);
  // Closes the socket; the port is then free for a server (SO_REUSEADDR). Idempotent.
  void Release();

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace weft::testing
