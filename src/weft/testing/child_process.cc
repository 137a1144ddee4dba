#include "weft/testing/child_process.h"

#include <cerrno>
#include <chrono>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/core/str_util.h"

extern char** environ;

namespace weft::testing {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  if (argv.empty()) return InvalidArgument("a child process needs a binary");
  std::map<std::string, std::string> merged;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const size_t equals = text.find('=');
    if (equals != std::string::npos) merged[text.substr(0, equals)] = text.substr(equals + 1);
  }
  for (const auto& [name, value] : env) merged[name] = value;
  std::vector<std::string> env_text;
  for (const auto& [name, value] : merged) env_text.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& entry : env_text) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argv_pointers;
  for (std::string& arg : args) argv_pointers.push_back(arg.data());
  argv_pointers.push_back(nullptr);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return Internal("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  pid_t pid = 0;
  const int spawn_error =
      posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv_pointers.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawn_error != 0) {
    close(pipe_fds[0]);
    return Internal("could not start ", args[0], ": error ", spawn_error);
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, pipe_fds[0]));
}

ChildProcess::~ChildProcess() {
  Signal(SIGKILL);
  WaitForExit(10000).status().IgnoreError();
  close(output_fd_);
}

void ChildProcess::Signal(int signal) {
  if (!reaped_) kill(pid_, signal);
}

bool ChildProcess::ReadSome(int64_t timeout_ms) {
  if (output_ended_) return false;
  pollfd poll_fd{output_fd_, POLLIN, 0};
  if (poll(&poll_fd, 1, static_cast<int>(timeout_ms)) <= 0) return true;
  char buffer[4096];
  const ssize_t n = read(output_fd_, buffer, sizeof(buffer));
  if (n <= 0) {
    output_ended_ = true;
    return false;
  }
  output_.append(buffer, static_cast<size_t>(n));
  return true;
}

Status ChildProcess::WaitForOutput(const std::string& text, int64_t timeout_ms, size_t from) {
  const int64_t deadline = NowMs() + timeout_ms;
  while (output_.find(text, from) == std::string::npos) {
    const int64_t left = deadline - NowMs();
    if (left <= 0 || !ReadSome(left)) {
      return DeadlineExceeded("'", text, "' did not appear within ", timeout_ms,
                              " ms; the child printed: ", output_);
    }
  }
  return Status::OK();
}

StatusOr<int> ChildProcess::WaitForExit(int64_t timeout_ms) {
  if (reaped_) return FailedPrecondition("child ", pid_, " was already reaped");
  const int64_t deadline = NowMs() + timeout_ms;
  // The output ends when the child (and whatever inherited its pipe) closes it.
  while (!output_ended_) {
    const int64_t left = deadline - NowMs();
    if (left <= 0) {
      return DeadlineExceeded("child ", pid_, " still running after ", timeout_ms, " ms");
    }
    ReadSome(left);
  }
  // Then the exit itself, waited for on a pidfd so the wait is bounded.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd >= 0) {
    pollfd poll_fd{pidfd, POLLIN, 0};
    const int64_t left = deadline - NowMs();
    const int ready = poll(&poll_fd, 1, static_cast<int>(left > 0 ? left : 0));
    close(pidfd);
    if (ready <= 0) return DeadlineExceeded("child ", pid_, " closed its output but did not exit");
  }
  int wait_status = 0;
  pid_t result = -1;
  do {
    result = waitpid(pid_, &wait_status, 0);
  } while (result < 0 && errno == EINTR);
  if (result != pid_) return Internal("waitpid failed for child ", pid_);
  reaped_ = true;
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

}  // namespace weft::testing
