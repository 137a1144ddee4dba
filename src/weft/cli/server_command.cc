#include "weft/cli/server_command.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "weft/distributed/rpc/grpc_server.h"

namespace weft::cli {
namespace {

int stop_pipe[2] = {-1, -1};

// Async-signal-safe: one write.
void OnStopSignal(int signal) {
  const unsigned char number = static_cast<unsigned char>(signal);
  [[maybe_unused]] ssize_t written = write(stop_pipe[1], &number, 1);
}

// The server's cluster and task from the flags, WEFT_CONFIG, or the defaults, in that order.
StatusOr<ServerConfig> ResolveServerConfig(const ServerFlags& flags) {
  ServerConfig config;
  const char* weft_config = std::getenv("WEFT_CONFIG");
  if (!flags.cluster.empty()) {
    WEFT_ASSIGN_OR_RETURN(config.cluster, ClusterSpec::FromFlag(flags.cluster));
    config.task.job = "worker";
  } else if (weft_config != nullptr && *weft_config != '\0') {
    StatusOr<ServerConfig> parsed = ParseWeftConfig(weft_config);
    if (!parsed.ok()) return parsed.status().WithContext("WEFT_CONFIG");
    config = std::move(parsed).value();
  } else {
    WEFT_ASSIGN_OR_RETURN(config.cluster, ClusterSpec::FromFlag("worker=127.0.0.1:0"));
    config.task.job = "worker";
  }
  if (!flags.job.empty()) config.task.job = flags.job;
  if (flags.task >= 0) config.task.index = flags.task;
  WEFT_RETURN_IF_ERROR(ValidateTask(config.cluster, config.task));
  return config;
}

}  // namespace

CLI::App* AddServerCommand(CLI::App& app, ServerFlags& flags) {
  CLI::App* server = app.add_subcommand("server", "Run one task of a cluster (master and worker)");
  server->add_option("--cluster", flags.cluster,
                     "Jobs and task addresses: \"worker=127.0.0.1:2222,127.0.0.1:2223\" "
                     "(default: WEFT_CONFIG, else one task on a free port)");
  server->add_option("--job", flags.job, "This server's job (default: worker)");
  server->add_option("--task", flags.task, "This server's task index in its job (default: 0)")
      ->check(CLI::NonNegativeNumber);
  server->add_option("--devices", flags.devices, "CPU devices of this task")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  server->add_option("--bind", flags.bind_host, "Interface to listen on")->capture_default_str();
  server->add_option("--intra-op-threads", flags.intra_op_threads, "0: one per core")
      ->check(CLI::NonNegativeNumber);
  server->add_option("--inter-op-threads", flags.inter_op_threads, "0: one per core")
      ->check(CLI::NonNegativeNumber);
  server
      ->add_option("--worker-timeout-ms", flags.worker_timeout_ms,
                   "How long the master waits for any worker to answer: a new session's wait for "
                   "the workers to come up, each set-up and close call, and a running step's "
                   "liveness probes (a session's config may set its own)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return server;
}

int RunServerCommand(const ServerFlags& flags) {
  StatusOr<ServerConfig> config = ResolveServerConfig(flags);
  if (!config.ok()) {
    std::fprintf(stderr, "weft server: %s\n", config.status().ToString().c_str());
    return 2;
  }
  // Threads that exist before main (OpenBLAS starts its own at load) do not block signals, so a
  // handler, not sigwait, catches them: it only writes the signal number to a pipe this thread
  // waits on.
  if (pipe2(stop_pipe, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "weft server: cannot create a pipe\n");
    return 1;
  }
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);

  GrpcServerOptions options;
  options.server = *config;
  options.bind_host = flags.bind_host;
  options.devices = flags.devices;
  options.intra_op_threads = flags.intra_op_threads;
  options.inter_op_threads = flags.inter_op_threads;
  options.worker_timeout_ms = flags.worker_timeout_ms;
  StatusOr<std::unique_ptr<GrpcServer>> server = GrpcServer::Create(options);
  if (!server.ok()) {
    std::fprintf(stderr, "weft server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "weft server: task %s with %d device(s)\n", (*server)->task_name().c_str(),
               flags.devices);
  std::fprintf(stdout, "weft server listening on %s\n", (*server)->address().c_str());
  std::fflush(stdout);

  unsigned char received = 0;
  while (read(stop_pipe[0], &received, 1) < 0 && errno == EINTR) {
  }
  std::fprintf(stderr, "weft server: %s received, stopping\n",
               received == SIGTERM ? "SIGTERM" : "SIGINT");
  (*server)->Stop();
  return 0;
}

}  // namespace weft::cli
