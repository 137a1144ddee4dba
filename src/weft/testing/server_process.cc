#include "weft/testing/server_process.h"

#include <chrono>
#include <thread>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/core/net/free_ports.h"
#include "weft/core/str_util.h"

extern char** environ;

namespace weft::testing {
namespace {

constexpr std::string_view kListeningLine = "weft server listening on ";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(const std::string& binary,
                                                              const std::vector<std::string>& flags,
                                                              int64_t timeout_ms) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return Internal("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  std::vector<std::string> args = {binary, "server"};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_error =
      posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawn_error != 0) {
    close(pipe_fds[0]);
    return Internal("could not start ", binary, ": error ", spawn_error);
  }
  auto process = std::unique_ptr<ServerProcess>(new ServerProcess(pid, pipe_fds[0], flags));
  StatusOr<std::string> address = process->ReadLineAfter(kListeningLine, timeout_ms);
  if (!address.ok()) return address.status();
  process->address_ = std::move(address).value();
  return process;
}

StatusOr<std::string> ServerProcess::ReadLineAfter(std::string_view prefix, int64_t timeout_ms) {
  const int64_t deadline = NowMs() + timeout_ms;
  while (true) {
    const size_t line_start = printed_.find(prefix, consumed_);
    if (line_start != std::string::npos) {
      const size_t line_end = printed_.find('\n', line_start);
      if (line_end != std::string::npos) {
        const size_t value_start = line_start + prefix.size();
        consumed_ = line_end + 1;
        return printed_.substr(value_start, line_end - value_start);
      }
    }
    const int64_t left = deadline - NowMs();
    if (left <= 0) {
      return DeadlineExceeded("weft server ", StrJoin(flags_, " "), " did not print \"", prefix,
                              "\" within ", timeout_ms, " ms; it printed: ", printed_);
    }
    pollfd poll_fd{stdout_fd_, POLLIN, 0};
    if (poll(&poll_fd, 1, static_cast<int>(left)) <= 0) continue;
    char buffer[512];
    const ssize_t n = read(stdout_fd_, buffer, sizeof(buffer));
    if (n <= 0) {
      StatusOr<int> exit_code = WaitForExit(1000);
      return Unavailable("weft server ", StrJoin(flags_, " "), " exited (",
                         exit_code.ok() ? StrCat("code ", *exit_code) : "still running",
                         ") before printing \"", prefix, "\"; it printed: ", printed_);
    }
    printed_.append(buffer, static_cast<size_t>(n));
  }
}

ServerProcess::~ServerProcess() {
  Signal(SIGKILL);
  WaitForExit(10000).status().IgnoreError();
  close(stdout_fd_);
}

void ServerProcess::Signal(int signal) {
  if (!reaped_) kill(pid_, signal);
}

StatusOr<int> ServerProcess::WaitForExit(int64_t timeout_ms) {
  const int64_t deadline = NowMs() + timeout_ms;
  while (!reaped_) {
    int wait_status = 0;
    const pid_t result = waitpid(pid_, &wait_status, WNOHANG);
    if (result == pid_) {
      reaped_ = true;
      return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
    }
    if (result < 0) return Internal("waitpid failed for server ", pid_);
    if (NowMs() >= deadline) {
      return DeadlineExceeded("server ", pid_, " still running after ", timeout_ms, " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return FailedPrecondition("server ", pid_, " was already reaped");
}

std::string LoopbackWorkerConfig(const std::vector<int>& ports, int task) {
  std::vector<std::string> workers;
  for (int port : ports) workers.push_back(StrCat("\"127.0.0.1:", port, "\""));
  return StrCat("{\"cluster\": {\"worker\": [", StrJoin(workers, ", "),
                "]}, \"task\": {\"type\": \"worker\", \"index\": ", task, "}}");
}

int UnusedLoopbackPort() { return UnusedLoopbackPorts(1)[0]; }

std::vector<int> UnusedLoopbackPorts(int count) {
  StatusOr<std::vector<int>> ports = net::PickFreePorts(count);
  // No free port at all: zeros, which the child then fails to serve on, naming the address.
  return ports.ok() ? *std::move(ports) : std::vector<int>(count, 0);
}

HeldLoopbackPort::HeldLoopbackPort() {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(fd_, 8) != 0 ||
      getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    Release();
    return;
  }
  port_ = ntohs(address.sin_port);
}

bool HeldLoopbackPort::WaitForConnection(int64_t timeout_ms) {
  if (fd_ < 0) return false;
  pollfd poll_fd{fd_, POLLIN, 0};
  if (poll(&poll_fd, 1, static_cast<int>(timeout_ms)) <= 0) return false;
  const int connection = accept(fd_, nullptr, nullptr);
  if (connection < 0) return false;
  close(connection);
  return true;
}

void HeldLoopbackPort::Release() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace weft::testing
