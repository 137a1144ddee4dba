#include "weft/cli/launch_command.h"

#include <cerrno>
#include <csignal>
#include <cstring>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include "weft/cli/process_group.h"
#include "weft/core/str_util.h"

extern char** environ;

namespace weft::cli {
namespace {

int signal_pipe[2] = {-1, -1};

// Async-signal-safe: one write.
void OnSignal(int signal) {
  const unsigned char number = static_cast<unsigned char>(signal);
  [[maybe_unused]] ssize_t written = write(signal_pipe[1], &number, 1);
}

}  // namespace

StatusOr<std::vector<int>> PickFreePorts(int count, const std::string& host) {
  std::vector<int> fds;
  std::vector<int> ports;
  Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    socklen_t length = sizeof(address);
    if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
      status = InvalidArgument("'", host, "' is not an IPv4 address to pick a port on");
    } else if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
               ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      status = Unavailable("cannot find a free port on ", host, ": ", std::strerror(errno));
    } else {
      ports.push_back(ntohs(address.sin_port));
    }
    if (fd >= 0) fds.push_back(fd);
  }
  // All held open until here, so the ports are distinct.
  for (int fd : fds) ::close(fd);
  if (!status.ok()) return status;
  return ports;
}

std::string WeftConfigJson(const std::vector<std::string>& addresses, int index) {
  nlohmann::json config;
  config["cluster"]["worker"] = addresses;
  config["task"]["type"] = "worker";
  config["task"]["index"] = index;
  return config.dump();
}

CLI::App* AddLaunchCommand(CLI::App& app, LaunchFlags& flags) {
  CLI::App* launch = app.add_subcommand(
      "launch", "Start N local workers of one cluster: weft launch --workers N -- weft train ...");
  launch->add_option("--workers", flags.workers, "Number of worker processes")
      ->required()
      ->check(CLI::Range(1, 1024));
  launch
      ->add_option("--devices-per-worker", flags.devices_per_worker,
                   "Devices of each worker (WEFT_DEVICES_PER_WORKER)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  launch
      ->add_option("--timeout-ms", flags.timeout_ms,
                   "After a worker fails or a signal is forwarded: how long the others get to "
                   "stop after SIGTERM before SIGKILL")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  launch->add_option("command", flags.command, "The command each worker runs, after --")
      ->required();
  return launch;
}

int RunLaunchCommand(const LaunchFlags& flags) {
  StatusOr<std::vector<int>> ports = PickFreePorts(flags.workers);
  if (!ports.ok()) {
    std::fprintf(stderr, "weft launch: %s\n", ports.status().ToString().c_str());
    return 1;
  }
  std::vector<std::string> addresses;
  for (int port : *ports) addresses.push_back(StrCat("127.0.0.1:", port));

  // The workers' environment: ours, less what would describe another cluster, plus theirs.
  std::vector<std::string> base_env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (text.rfind("WEFT_CONFIG=", 0) == 0 || text.rfind("WEFT_DEVICES_PER_WORKER=", 0) == 0 ||
        text.rfind("TF_CONFIG=", 0) == 0) {
      continue;
    }
    base_env.emplace_back(text);
  }
  std::vector<ChildSpec> children(flags.workers);
  for (int i = 0; i < flags.workers; ++i) {
    children[i].argv = flags.command;
    children[i].env = base_env;
    children[i].env.push_back("WEFT_CONFIG=" + WeftConfigJson(addresses, i));
    children[i].env.push_back(StrCat("WEFT_DEVICES_PER_WORKER=", flags.devices_per_worker));
    children[i].prefix = StrCat("[worker ", i, "] ");
  }

  // A handler (not sigwait: OpenBLAS's threads exist before main and do not block signals) writes
  // each signal's number to a pipe the supervising loop polls.
  if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::fprintf(stderr, "weft launch: cannot create a pipe: %s\n", std::strerror(errno));
    return 1;
  }
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : {SIGINT, SIGTERM, SIGCHLD}) sigaction(signal, &action, nullptr);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, nullptr);

  std::fprintf(stderr, "weft launch: %d worker(s): %s\n", flags.workers,
               StrJoin(addresses, ",").c_str());
  RunChildrenOptions options;
  options.grace_ms = flags.timeout_ms;
  options.signal_fd = signal_pipe[0];
  return RunChildren(children, options);
}

}  // namespace weft::cli
