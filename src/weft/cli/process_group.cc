#include "weft/cli/process_group.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <optional>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/cli/line_prefixer.h"

namespace weft::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kPollIntervalMs = 200;

void WriteAll(int fd, const std::string& text) {
  const char* next = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t written = ::write(fd, next, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;  // our own output is gone: keep supervising regardless
    next += written;
    left -= static_cast<size_t>(written);
  }
}

// "[worker 1]" for the prefix "[worker 1] ".
std::string Label(const std::string& prefix) {
  return prefix.substr(0, prefix.find_last_not_of(' ') + 1);
}

void Say(const RunChildrenOptions& options, const std::string& text) {
  WriteAll(2, options.name + ": " + text + "\n");
}

struct Stream {
  int fd = -1;     // our read end; -1 once closed
  int target = 1;  // where its lines go
  std::unique_ptr<LinePrefixer> prefixer;
};

struct Child {
  pid_t pid = -1;  // -1: never started
  bool running = false;
  int code = 0;
  Stream out;
  Stream err;
};

void CloseStream(Stream& stream) {
  if (stream.fd < 0) return;
  WriteAll(stream.target, stream.prefixer->Finish());
  ::close(stream.fd);
  stream.fd = -1;
}

// Reads what is there; closes the stream at end of file.
void Drain(Stream& stream) {
  char buffer[16384];
  const ssize_t got = ::read(stream.fd, buffer, sizeof(buffer));
  if (got < 0 && errno == EINTR) return;
  if (got <= 0) {
    CloseStream(stream);
    return;
  }
  WriteAll(stream.target,
           stream.prefixer->Feed(std::string_view(buffer, static_cast<size_t>(got))));
}

void SignalChild(const Child& child, int signal) {
  if (!child.running) return;
  // The child leads its own group; fall back to the pid alone if the group is already gone.
  if (::kill(-child.pid, signal) != 0) ::kill(child.pid, signal);
}

// Starts one child with its stdout and stderr on fresh pipes; false (errno) when it cannot start.
bool Start(const ChildSpec& spec, Child& child) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return false;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int signal : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGHUP}) sigaddset(&defaults, signal);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& entry : spec.env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    errno = rc;
    return false;
  }
  child.pid = pid;
  child.running = true;
  child.out = Stream{out_pipe[0], 1, std::make_unique<LinePrefixer>(spec.prefix)};
  child.err = Stream{err_pipe[0], 2, std::make_unique<LinePrefixer>(spec.prefix)};
  return true;
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

int RunChildren(const std::vector<ChildSpec>& specs, const RunChildrenOptions& options) {
  std::vector<Child> children(specs.size());
  std::optional<int> failure;  // the first failing child's code
  std::optional<Clock::time_point> kill_at;
  bool killed = false;
  const auto grace = std::chrono::milliseconds(options.grace_ms);
  auto stop_others = [&](int signal) {
    for (const Child& child : children) SignalChild(child, signal);
    if (!kill_at) kill_at = Clock::now() + grace;
  };

  for (size_t i = 0; i < specs.size(); ++i) {
    if (!Start(specs[i], children[i])) {
      Say(options, "cannot start '" + specs[i].argv[0] + "' for " + Label(specs[i].prefix) + ": " +
                       std::strerror(errno) + "; stopping the others");
      failure = 127;
      stop_others(SIGTERM);
      break;
    }
  }

  std::optional<Clock::time_point> drain_until;
  while (true) {
    const bool any_running =
        std::any_of(children.begin(), children.end(), [](const Child& c) { return c.running; });
    std::vector<pollfd> waiting;
    std::vector<Stream*> streams;
    for (Child& child : children) {
      for (Stream* stream : {&child.out, &child.err}) {
        if (stream->fd < 0) continue;
        waiting.push_back({stream->fd, POLLIN, 0});
        streams.push_back(stream);
      }
    }
    if (!any_running && streams.empty()) break;
    // Every child has exited but something it started still holds its output open: read for
    // the grace period, then stop reading.
    if (!any_running) {
      if (!drain_until) drain_until = Clock::now() + grace;
      if (Clock::now() >= *drain_until) {
        for (Stream* stream : streams) CloseStream(*stream);
        break;
      }
    }
    if (options.signal_fd >= 0) waiting.push_back({options.signal_fd, POLLIN, 0});
    const int ready = ::poll(waiting.data(), waiting.size(), kPollIntervalMs);
    if (ready < 0 && errno != EINTR) {
      Say(options, std::string("poll: ") + std::strerror(errno));
      stop_others(SIGKILL);
    }
    for (size_t i = 0; ready > 0 && i < streams.size(); ++i) {
      if (waiting[i].revents != 0) Drain(*streams[i]);
    }
    if (ready > 0 && options.signal_fd >= 0 && waiting.back().revents != 0) {
      unsigned char signal = 0;
      if (::read(options.signal_fd, &signal, 1) == 1 && (signal == SIGINT || signal == SIGTERM)) {
        Say(options, std::string(signal == SIGINT ? "SIGINT" : "SIGTERM") +
                         " received, forwarding it to the workers");
        stop_others(signal);
      }
    }
    for (size_t i = 0; i < children.size(); ++i) {
      Child& child = children[i];
      if (!child.running) continue;
      int status = 0;
      const pid_t reaped = ::waitpid(child.pid, &status, WNOHANG);
      if (reaped != child.pid) continue;
      child.running = false;
      child.code = ExitCode(status);
      // Stray members of its group would hold the pipes open after a failure.
      if (child.code != 0 || kill_at) ::kill(-child.pid, SIGKILL);
      if (child.code != 0 && !failure) {
        failure = child.code;
        Say(options, Label(specs[i].prefix) + " exited with code " + std::to_string(child.code) +
                         "; stopping the others");
        stop_others(SIGTERM);
      }
    }
    if (kill_at && !killed && Clock::now() >= *kill_at) {
      killed = true;
      for (const Child& child : children) SignalChild(child, SIGKILL);
    }
  }
  return failure.value_or(0);
}

}  // namespace weft::cli
