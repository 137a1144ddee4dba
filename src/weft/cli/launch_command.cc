#include "weft/cli/launch_command.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/cli/process_group.h"
#include "weft/core/net/free_ports.h"
#include "weft/core/str_util.h"
#include "weft/distributed/cluster/elastic_membership.h"
#include "weft/distributed/cluster/elastic_membership_service.h"

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

std::string WeftConfigJson(const std::vector<std::string>& addresses, int index) {
  return WeftConfigJson({{"worker", addresses}}, "worker", index);
}

std::string WeftConfigJson(const std::map<std::string, std::vector<std::string>>& jobs,
                           const std::string& job, int index) {
  nlohmann::json config;
  for (const auto& [name, addresses] : jobs) config["cluster"][name] = addresses;
  config["task"]["type"] = job;
  config["task"]["index"] = index;
  return config.dump();
}

PsLaunchPlan PlanPsLaunch(const LaunchFlags& flags, const std::vector<std::string>& addresses,
                          const std::vector<std::string>& base_env,
                          const std::string& server_binary) {
  PsLaunchPlan plan;
  using Addresses = std::vector<std::string>;
  const auto workers = addresses.begin() + 1;
  const auto ps = workers + flags.workers;
  const std::string chief_address = addresses[0].substr(0, addresses[0].rfind(':')) + ":0";
  plan.cluster["chief"] = Addresses{chief_address};
  plan.cluster["worker"] = Addresses(workers, ps);
  plan.cluster["ps"] = Addresses(ps, ps + flags.ps);
  const std::string devices = StrCat("WEFT_DEVICES_PER_WORKER=", flags.devices_per_worker);
  for (const char* job : {"worker", "ps"}) {
    for (int i = 0; i < static_cast<int>(plan.cluster[job].size()); ++i) {
      ServiceSpec server;
      server.child.argv = {server_binary, "server", "--job", job, "--task", std::to_string(i)};
      server.child.env = base_env;
      server.child.env.push_back("WEFT_CONFIG=" + WeftConfigJson(plan.cluster, job, i));
      if (std::string_view(job) == "worker") server.child.env.push_back(devices);
      server.child.prefix = StrCat("[", job, " ", i, "] ");
      server.child.name = StrCat(job, ":", i);
      server.max_restarts = flags.restart_failed ? flags.max_restarts : 0;
      plan.tasks.push_back(server.child.name);
      plan.addresses.push_back(plan.cluster[job][i]);
      plan.servers.push_back(std::move(server));
    }
  }
  plan.chief.argv = flags.command;
  plan.chief.env = base_env;
  plan.chief.env.push_back("WEFT_CONFIG=" + WeftConfigJson(plan.cluster, "chief", 0));
  plan.chief.env.push_back(devices);
  plan.chief.prefix = "[chief] ";
  plan.chief.name = "chief:0";
  plan.tasks.push_back(plan.chief.name);
  plan.addresses.push_back(chief_address);
  return plan;
}

CLI::App* AddLaunchCommand(CLI::App& app, LaunchFlags& flags) {
  CLI::App* launch = app.add_subcommand(
      "launch",
      "Start N local workers of one cluster: weft launch --workers N -- weft train ...; or, with "
      "--ps M, N worker and M ps servers and the command once, as the chief");
  launch->add_option("--workers", flags.workers, "Number of worker processes")
      ->required()
      ->check(CLI::Range(1, 1024));
  CLI::Option* ps =
      launch
          ->add_option("--ps", flags.ps,
                       "Number of parameter servers: start the workers and these as `weft server` "
                       "tasks and run the command once, as the chief")
          ->check(CLI::Range(1, 1024));
  CLI::Option* elastic =
      launch
          ->add_flag("--elastic", flags.elastic,
                     "Elastic training: a worker lost to a signal leaves the job and the others "
                     "train on without a restart (docs/elastic.md)")
          ->excludes(ps);
  launch
      ->add_option("--min-workers", flags.min_workers,
                   "With --elastic: the fewest workers the job trains with; below it the workers "
                   "wait for lost ones to come back, then fail naming them")
      ->check(CLI::Range(1, 1024))
      ->needs(elastic)
      ->capture_default_str();
  launch
      ->add_option("--min-workers-timeout-ms", flags.min_workers_timeout_ms,
                   "With --elastic: how long the workers wait with fewer than --min-workers "
                   "before they fail, naming the missing workers")
      ->check(CLI::PositiveNumber)
      ->needs(elastic)
      ->capture_default_str();
  CLI::Option* restart = launch->add_flag(
      "--restart-failed", flags.restart_failed,
      "With --ps: start a server that exits while the chief runs again, on the same address; with "
      "--elastic: start a lost worker again, which joins the others at their next step");
  launch
      ->add_option("--max-restarts", flags.max_restarts,
                   "With --restart-failed: how many times each server is started again")
      ->check(CLI::Range(0, 1000))
      ->needs(restart)
      ->capture_default_str();
  launch
      ->add_option("--devices-per-worker", flags.devices_per_worker,
                   "Devices of each worker (WEFT_DEVICES_PER_WORKER)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  launch
      ->add_option("--timeout-ms", flags.timeout_ms,
                   "After a worker fails, the chief exits or a signal is forwarded: how long the "
                   "others get to stop after SIGTERM before SIGKILL")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  launch
      ->add_option("command", flags.command,
                   "The command each worker runs (with --ps: the chief), after --")
      ->required();
  return launch;
}

namespace {

// The children's environment: ours, less what would describe another cluster.
std::vector<std::string> BaseEnvironment() {
  std::vector<std::string> base_env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (text.rfind("WEFT_CONFIG=", 0) == 0 || text.rfind("WEFT_DEVICES_PER_WORKER=", 0) == 0 ||
        text.rfind("TF_CONFIG=", 0) == 0 || text.rfind("WEFT_ELASTIC_", 0) == 0) {
      continue;
    }
    base_env.emplace_back(text);
  }
  return base_env;
}

// A handler (not sigwait: OpenBLAS's threads exist before main and do not block signals) writes
// each signal's number to a pipe the supervising loop polls. Returns the pipe's read end, or -1.
int CatchSignals() {
  if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::fprintf(stderr, "weft launch: cannot create a pipe: %s\n", std::strerror(errno));
    return -1;
  }
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : {SIGINT, SIGTERM, SIGCHLD}) sigaction(signal, &action, nullptr);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, nullptr);
  return signal_pipe[0];
}

// The command once per worker, each told its task of the worker job at `addresses`.
std::vector<ChildSpec> WorkerSpecs(const LaunchFlags& flags,
                                   const std::vector<std::string>& addresses) {
  const std::vector<std::string> base_env = BaseEnvironment();
  std::vector<ChildSpec> children(flags.workers);
  for (int i = 0; i < flags.workers; ++i) {
    children[i].argv = flags.command;
    children[i].env = base_env;
    children[i].env.push_back("WEFT_CONFIG=" + WeftConfigJson(addresses, i));
    children[i].env.push_back(StrCat("WEFT_DEVICES_PER_WORKER=", flags.devices_per_worker));
    children[i].prefix = StrCat("[worker ", i, "] ");
  }
  return children;
}

int RunWorkers(const LaunchFlags& flags, const std::vector<std::string>& addresses,
               const RunChildrenOptions& options) {
  const std::vector<ChildSpec> children = WorkerSpecs(flags, addresses);
  std::fprintf(stderr, "weft launch: %d worker(s): %s\n", flags.workers,
               StrJoin(addresses, ",").c_str());
  return RunChildren(children, options);
}

// On stdout, so that whoever runs the launch can find each process and its address: "weft launch:
// started worker:1 pid 123 at 127.0.0.1:40001"; a restart says "restarted ps:0 ...", or with
// `started_again` "started worker:1 ... (restart 1)".
void PrintStart(const std::string& task, pid_t pid, const std::string& address, int restarts,
                bool started_again) {
  const bool restarted_verb = restarts > 0 && !started_again;
  const std::string note = restarts > 0 && started_again ? StrCat(" (restart ", restarts, ")") : "";
  std::fprintf(stdout, "weft launch: %s %s pid %d at %s%s\n",
               restarted_verb ? "restarted" : "started", task.c_str(), static_cast<int>(pid),
               address.c_str(), note.c_str());
  std::fflush(stdout);
}

int RunElasticWorkers(const LaunchFlags& flags, const std::vector<std::string>& addresses,
                      RunChildrenOptions& options) {
  if (flags.min_workers > flags.workers) {
    std::fprintf(stderr, "weft launch: --min-workers %d is more than --workers %d\n",
                 flags.min_workers, flags.workers);
    return 2;
  }
  // Read by the membership's threads when they evict a worker, written here at each start.
  std::vector<std::atomic<pid_t>> pids(flags.workers);
  ElasticMembership::Options membership_options;
  membership_options.num_workers = flags.workers;
  membership_options.min_workers = flags.min_workers;
  membership_options.min_workers_timeout = std::chrono::milliseconds(flags.min_workers_timeout_ms);
  membership_options.evict = [&pids](int worker) {
    std::fprintf(stderr,
                 "weft launch: worker:%d did not come to the step boundary in time; "
                 "stopping it\n",
                 worker);
    const pid_t pid = pids[worker].load();
    if (pid > 0) ::kill(-pid, SIGKILL);
  };
  ElasticMembership membership(membership_options);
  StatusOr<std::unique_ptr<ElasticMembershipServer>> server =
      ElasticMembershipServer::Create(&membership, "127.0.0.1");
  if (!server.ok()) {
    std::fprintf(stderr, "weft launch: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::vector<ChildSpec> children = WorkerSpecs(flags, addresses);
  for (int i = 0; i < flags.workers; ++i) {
    children[i].env.push_back(StrCat(kElasticMembershipVariable, "=", (*server)->address()));
    children[i].env.push_back(StrCat(kElasticMinWorkersVariable, "=", flags.min_workers));
    children[i].name = StrCat("worker:", i);
  }
  std::fprintf(stderr, "weft launch: %d elastic worker(s) (at least %d): %s\n", flags.workers,
               flags.min_workers, StrJoin(addresses, ",").c_str());
  options.on_start = [&](size_t child, pid_t pid, int restarts) {
    pids[child] = pid;
    membership.WorkerStarted(static_cast<int>(child));
    PrintStart(children[child].name, pid, addresses[child], restarts, /*started_again=*/true);
  };
  options.on_exit = [&membership](size_t child, int wait_status) {
    if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) {
      membership.WorkerFinished(static_cast<int>(child));
    } else {
      membership.WorkerExited(static_cast<int>(child));
    }
  };
  const int code = RunElastic(children, flags.restart_failed ? flags.max_restarts : 0, options);
  (*server)->Shutdown();
  return code;
}

int RunPsJob(const LaunchFlags& flags, const std::vector<std::string>& addresses,
             RunChildrenOptions& options) {
  // The servers are this very binary: /proc/self/exe still names it if the file was replaced.
  const PsLaunchPlan plan = PlanPsLaunch(flags, addresses, BaseEnvironment(), "/proc/self/exe");
  std::string cluster;
  for (const auto& [job, tasks] : plan.cluster) {
    cluster += StrCat(cluster.empty() ? "" : ";", job, "=", StrJoin(tasks, ","));
  }
  std::fprintf(stderr, "weft launch: chief, %d worker(s) and %d ps: %s\n", flags.workers, flags.ps,
               cluster.c_str());
  options.on_start = [&plan](size_t child, pid_t pid, int restarts) {
    PrintStart(plan.tasks[child], pid, plan.addresses[child], restarts, /*started_again=*/false);
  };
  return RunWithServices(plan.chief, plan.servers, options);
}

}  // namespace

int RunLaunchCommand(const LaunchFlags& flags) {
  if (flags.restart_failed && flags.ps == 0 && !flags.elastic) {
    std::fprintf(stderr,
                 "weft launch: --restart-failed needs --ps or --elastic (a worker of a "
                 "synchronous job cannot rejoin without --elastic)\n");
    return 2;
  }
  const int processes = flags.ps > 0 ? flags.workers + flags.ps + 1 : flags.workers;
  StatusOr<std::vector<int>> ports = net::PickFreePorts(processes);
  if (!ports.ok()) {
    std::fprintf(stderr, "weft launch: %s\n", ports.status().ToString().c_str());
    return 1;
  }
  std::vector<std::string> addresses;
  for (int port : *ports) addresses.push_back(StrCat("127.0.0.1:", port));
  RunChildrenOptions options;
  options.grace_ms = flags.timeout_ms;
  options.signal_fd = CatchSignals();
  if (options.signal_fd < 0) return 1;
  if (flags.ps > 0) return RunPsJob(flags, addresses, options);
  if (flags.elastic) return RunElasticWorkers(flags, addresses, options);
  return RunWorkers(flags, addresses, options);
}

}  // namespace weft::cli
