#include "weft/cli/process_group.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

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

// What a child's exit means to its group.
enum class Role {
  kPeer,     // RunChildren's: the first failure ends the group with its code
  kMain,     // its exit, any way, ends the group with its code
  kService,  // runs for the main child: its exit is reported, and it may be started again
  kElastic,  // a worker of an elastic job: lost when a signal ends it, and started again
};

struct Child {
  const ChildSpec* spec = nullptr;
  Role role = Role::kPeer;
  int max_restarts = 0;   // kService and kElastic only
  int restarts_left = 0;  // kService and kElastic only
  int starts = 0;         // how many times it was started
  pid_t pid = -1;         // -1: never started
  bool running = false;
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

// "code 3" or "signal 9 (Killed)": unlike ExitCode, tells an exit(137) from a SIGKILL.
std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    return "signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  }
  return "code " + std::to_string(ExitCode(status));
}

std::string Name(const Child& child) {
  return child.spec->name.empty() ? Label(child.spec->prefix) : child.spec->name;
}

// The children of one RunChildren or RunWithServices call, and what the call has decided about
// them: its exit code so far, and when those still running get SIGKILL.
class ChildGroup {
 public:
  ChildGroup(std::vector<Child> children, const RunChildrenOptions& options)
      : options_(options), children_(std::move(children)), grace_(options.grace_ms) {}

  // Starts the children in order; one that cannot start (127) stops those already started.
  void StartAll();
  // Waits up to one poll interval and handles what came: output, a signal, exits. False once
  // every child has exited and its output is read (or the grace period for that ran out).
  bool Step();
  int exit_code() const {
    if (!result_ && !elastic_finished_ && elastic_lost_code_ != 0) return elastic_lost_code_;
    return result_.value_or(0);
  }

 private:
  bool StartChild(Child& child);
  void StopOthers(int signal) {
    for (const Child& child : children_) SignalChild(child, signal);
    if (!kill_at_) kill_at_ = Clock::now() + grace_;
  }
  // The output still open: every child's, then that of services since restarted.
  std::vector<Stream*> OpenStreams();
  // Forwards a SIGINT or SIGTERM read from options.signal_fd to the children.
  void ForwardSignal();
  // Reaps the children that exited and acts on each as its role says.
  void ReapExited();
  // A service that exited while the group runs: reported, then restarted while it may be.
  void ServiceExited(Child& child, int status);
  // A worker of an elastic job that exited: lost (a signal), done (0) or failed (a code).
  void ElasticExited(Child& child, int status);
  // Starts a service or lost worker again while it has restarts left (else says it gives up).
  void Restart(Child& child);

  const RunChildrenOptions& options_;
  std::vector<Child> children_;
  std::vector<Stream> retired_;  // the output of services' earlier runs, read to its end
  const std::chrono::milliseconds grace_;
  std::optional<int> result_;  // the first failing peer's code, main's code, or 127
  // RunElastic: whether a worker finished (exit 0), and the code of the last one lost.
  bool elastic_finished_ = false;
  int elastic_lost_code_ = 0;
  std::optional<Clock::time_point> kill_at_;
  bool killed_ = false;
  std::optional<Clock::time_point> drain_until_;
};

bool ChildGroup::StartChild(Child& child) {
  if (!Start(*child.spec, child)) return false;
  if (options_.on_start) {
    options_.on_start(static_cast<size_t>(&child - children_.data()), child.pid, child.starts);
  }
  ++child.starts;
  return true;
}

void ChildGroup::StartAll() {
  for (Child& child : children_) {
    if (!StartChild(child)) {
      Say(options_, "cannot start '" + child.spec->argv[0] + "' for " + Name(child) + ": " +
                        std::strerror(errno) + "; stopping the others");
      result_ = 127;
      StopOthers(SIGTERM);
      break;
    }
  }
}

std::vector<Stream*> ChildGroup::OpenStreams() {
  std::vector<Stream*> streams;
  for (Child& child : children_) {
    for (Stream* stream : {&child.out, &child.err}) {
      if (stream->fd >= 0) streams.push_back(stream);
    }
  }
  for (Stream& stream : retired_) {
    if (stream.fd >= 0) streams.push_back(&stream);
  }
  return streams;
}

bool ChildGroup::Step() {
  const bool any_running =
      std::any_of(children_.begin(), children_.end(), [](const Child& c) { return c.running; });
  const std::vector<Stream*> streams = OpenStreams();
  if (!any_running && streams.empty()) return false;
  // Every child has exited but something it started still holds its output open: read for
  // the grace period, then stop reading.
  if (!any_running) {
    if (!drain_until_) drain_until_ = Clock::now() + grace_;
    if (Clock::now() >= *drain_until_) {
      for (Stream* stream : streams) CloseStream(*stream);
      return false;
    }
  }
  std::vector<pollfd> waiting;
  for (const Stream* stream : streams) waiting.push_back({stream->fd, POLLIN, 0});
  if (options_.signal_fd >= 0) waiting.push_back({options_.signal_fd, POLLIN, 0});
  const int ready = ::poll(waiting.data(), waiting.size(), kPollIntervalMs);
  if (ready < 0 && errno != EINTR) {
    Say(options_, std::string("poll: ") + std::strerror(errno));
    StopOthers(SIGKILL);
  }
  for (size_t i = 0; ready > 0 && i < streams.size(); ++i) {
    if (waiting[i].revents != 0) Drain(*streams[i]);
  }
  if (ready > 0 && options_.signal_fd >= 0 && waiting.back().revents != 0) ForwardSignal();
  ReapExited();
  if (kill_at_ && !killed_ && Clock::now() >= *kill_at_) {
    killed_ = true;
    for (const Child& child : children_) SignalChild(child, SIGKILL);
  }
  return true;
}

void ChildGroup::ForwardSignal() {
  unsigned char signal = 0;
  if (::read(options_.signal_fd, &signal, 1) == 1 && (signal == SIGINT || signal == SIGTERM)) {
    Say(options_, std::string(signal == SIGINT ? "SIGINT" : "SIGTERM") +
                      " received, forwarding it to every child");
    StopOthers(signal);
  }
}

void ChildGroup::ReapExited() {
  for (Child& child : children_) {
    if (!child.running) continue;
    int status = 0;
    if (::waitpid(child.pid, &status, WNOHANG) != child.pid) continue;
    child.running = false;
    const int code = ExitCode(status);
    const bool stopping = kill_at_.has_value();
    // Stray members of its group would hold the pipes open after a failure (or, for a service,
    // beside its next run).
    if (code != 0 || stopping || child.role == Role::kService) ::kill(-child.pid, SIGKILL);
    switch (child.role) {
      case Role::kPeer:
        if (code != 0 && !result_) {
          result_ = code;
          Say(options_,
              Name(child) + " exited with code " + std::to_string(code) + "; stopping the others");
          StopOthers(SIGTERM);
        }
        break;
      case Role::kMain:
        result_ = code;
        if (!stopping) {
          Say(options_,
              Name(child) + " exited with " + DescribeExit(status) + "; stopping the others");
        }
        StopOthers(SIGTERM);
        break;
      case Role::kService:
        if (!stopping) ServiceExited(child, status);
        break;
      case Role::kElastic:
        if (!stopping) ElasticExited(child, status);
        break;
    }
  }
}

void ChildGroup::ServiceExited(Child& child, int status) {
  Say(options_,
      Name(child) + " (pid " + std::to_string(child.pid) + ") exited with " + DescribeExit(status));
  Restart(child);
}

void ChildGroup::Restart(Child& child) {
  if (child.restarts_left <= 0) {
    if (child.max_restarts > 0) {
      Say(options_, "giving up on " + Name(child) + " after " + std::to_string(child.max_restarts) +
                        " restart(s)");
    }
    return;
  }
  --child.restarts_left;
  // Its last lines may still be in the old pipes: they are read to their end beside the new run.
  retired_.push_back(std::exchange(child.out, Stream{}));
  retired_.push_back(std::exchange(child.err, Stream{}));
  if (!StartChild(child)) {
    Say(options_,
        "cannot restart " + Name(child) + ": " + std::strerror(errno) + "; giving up on it");
    child.restarts_left = 0;
  }
}

void ChildGroup::ElasticExited(Child& child, int status) {
  const int code = ExitCode(status);
  if (options_.on_exit) {
    options_.on_exit(static_cast<size_t>(&child - children_.data()), status);
  }
  if (WIFEXITED(status)) {
    if (code == 0) {
      elastic_finished_ = true;
    } else if (!result_) {
      result_ = code;
      Say(options_,
          Name(child) + " exited with code " + std::to_string(code) + "; stopping the others");
      StopOthers(SIGTERM);
    }
    return;
  }
  elastic_lost_code_ = code;
  Say(options_, Name(child) + " (pid " + std::to_string(child.pid) +
                    ") lost: " + DescribeExit(status) + "; the others go on");
  Restart(child);
}

int Run(std::vector<Child> children, const RunChildrenOptions& options) {
  ChildGroup group(std::move(children), options);
  group.StartAll();
  while (group.Step()) {
  }
  return group.exit_code();
}

}  // namespace

int RunChildren(const std::vector<ChildSpec>& specs, const RunChildrenOptions& options) {
  std::vector<Child> children(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) children[i].spec = &specs[i];
  return Run(std::move(children), options);
}

int RunWithServices(const ChildSpec& main, const std::vector<ServiceSpec>& services,
                    const RunChildrenOptions& options) {
  std::vector<Child> children(services.size() + 1);
  for (size_t i = 0; i < services.size(); ++i) {
    children[i].spec = &services[i].child;
    children[i].role = Role::kService;
    children[i].max_restarts = children[i].restarts_left = std::max(services[i].max_restarts, 0);
  }
  children.back().spec = &main;
  children.back().role = Role::kMain;
  return Run(std::move(children), options);
}

int RunElastic(const std::vector<ChildSpec>& workers, int max_restarts,
               const RunChildrenOptions& options) {
  std::vector<Child> children(workers.size());
  for (size_t i = 0; i < workers.size(); ++i) {
    children[i].spec = &workers[i];
    children[i].role = Role::kElastic;
    children[i].max_restarts = children[i].restarts_left = std::max(max_restarts, 0);
  }
  return Run(std::move(children), options);
}

}  // namespace weft::cli
