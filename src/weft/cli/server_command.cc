#include "weft/cli/server_command.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "weft/cli/launch_command.h"
#include "weft/cli/metrics_endpoint.h"
#include "weft/cli/worker_cluster.h"
#include "weft/core/str_util.h"
#include "weft/distributed/cluster/address_exchange.h"
#include "weft/distributed/cluster/cluster_resolver.h"
#include "weft/distributed/rpc/grpc_server.h"

namespace weft::cli {
namespace {

int stop_pipe[2] = {-1, -1};

// Async-signal-safe: one write.
void OnStopSignal(int signal) {
  const unsigned char number = static_cast<unsigned char>(signal);
  [[maybe_unused]] ssize_t written = write(stop_pipe[1], &number, 1);
}

struct ServerSetup {
  ServerConfig config;
  int devices = 1;
  std::string bind_host;
  std::unique_ptr<AddressExchangeServer> coordinator;  // rank 0 of a rendezvous hosts it
};

// A Slurm / Open MPI rank: the cluster comes from the coordinator.
Status Rendezvous(const ServerFlags& flags, const ResolvedCluster& resolved, ServerSetup* setup) {
  if (!flags.job.empty() || flags.task >= 0) {
    return InvalidArgument("--job and --task come from the ", ClusterSourceName(resolved.source),
                           " rank (", resolved.rank, "); leave them out");
  }
  WEFT_ASSIGN_OR_RETURN(setup->config, MeetAtCoordinator(resolved, flags.worker_timeout_ms,
                                                         "weft server", &setup->coordinator));
  return Status::OK();
}

// The server's cluster and task from the flags, the environment, or the defaults, in that order.
StatusOr<ServerSetup> ResolveServerConfig(const ServerFlags& flags) {
  ServerSetup setup;
  setup.devices = flags.devices;
  setup.bind_host = flags.bind_host.empty() ? "127.0.0.1" : flags.bind_host;
  ServerConfig& config = setup.config;
  if (!flags.cluster.empty()) {
    WEFT_ASSIGN_OR_RETURN(config.cluster, ClusterSpec::FromFlag(flags.cluster));
    config.task.job = "worker";
  } else {
    WEFT_ASSIGN_OR_RETURN(ResolvedCluster resolved,
                          ResolveCluster(ProcessEnvironment(), ResolveOptions{flags.coordinator}));
    if (!flags.devices_given && resolved.devices_per_worker > 0) {
      setup.devices = resolved.devices_per_worker;
    }
    if (resolved.NeedsRendezvous()) {
      if (flags.bind_host.empty()) setup.bind_host = "0.0.0.0";
      WEFT_RETURN_IF_ERROR(Rendezvous(flags, resolved, &setup));
      return setup;
    }
    if (resolved.source != ClusterSource::kNone) {
      config = resolved.config;
    } else if (!flags.coordinator.empty()) {
      return InvalidArgument(
          "--coordinator needs a rank: run under srun (SLURM_PROCID) or "
          "mpirun (OMPI_COMM_WORLD_RANK)");
    } else {
      WEFT_ASSIGN_OR_RETURN(config.cluster, ClusterSpec::FromFlag("worker=127.0.0.1:0"));
      config.task.job = "worker";
    }
  }
  if (!flags.job.empty()) config.task.job = flags.job;
  if (flags.task >= 0) config.task.index = flags.task;
  WEFT_RETURN_IF_ERROR(ValidateTask(config.cluster, config.task));
  return setup;
}

}  // namespace

CLI::App* AddServerCommand(CLI::App& app, ServerFlags& flags) {
  CLI::App* server = app.add_subcommand("server", "Run one task of a cluster (master and worker)");
  server->add_option("--cluster", flags.cluster,
                     "Jobs and task addresses: \"worker=127.0.0.1:2222,127.0.0.1:2223\" "
                     "(default: WEFT_CONFIG, TF_CONFIG, Slurm or Open MPI ranks with a "
                     "coordinator, else one task on a free port)");
  server->add_option("--job", flags.job, "This server's job (default: worker)");
  server->add_option("--task", flags.task, "This server's task index in its job (default: 0)")
      ->check(CLI::NonNegativeNumber);
  server
      ->add_option("--devices", flags.devices,
                   "Compute devices of this task (default: WEFT_DEVICES_PER_WORKER, else 1)")
      ->each([&flags](const std::string&) { flags.devices_given = true; })
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  server
      ->add_option("--device-type", flags.device_type,
                   "The type of those devices (CPU, or a type a device factory registers)")
      ->capture_default_str();
  server->add_option("--bind", flags.bind_host,
                     "Interface to listen on (default: 127.0.0.1; 0.0.0.0 for Slurm and Open MPI "
                     "ranks)");
  server->add_option("--coordinator", flags.coordinator,
                     "HOST:PORT where Slurm or Open MPI ranks meet to learn each other's "
                     "addresses; rank 0 serves it (default: WEFT_COORDINATOR)");
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
  server
      ->add_option("--metrics-port", flags.metrics_port,
                   "Serve Prometheus metrics at http://HOST:PORT/metrics (0: a free port; "
                   "default: no endpoint)")
      ->check(CLI::Range(0, 65535));
  server
      ->add_option("--metrics-bind", flags.metrics_bind,
                   "Interface the metrics endpoint listens on; beyond loopback it needs "
                   "--token-file (scrapers send Authorization: Bearer) or --insecure")
      ->capture_default_str();
  return server;
}

int RunServerCommand(const ServerFlags& flags) {
  StatusOr<ServerSetup> setup = ResolveServerConfig(flags);
  if (!setup.ok()) {
    std::fprintf(stderr, "weft server: %s\n", setup.status().ToString().c_str());
    // Bad input is 2; a rendezvous that failed (a rank missing at the deadline) is 1.
    return IsInvalidArgument(setup.status()) ? 2 : 1;
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
  options.server = setup->config;
  options.bind_host = setup->bind_host;
  options.devices = setup->devices;
  options.device_type = flags.device_type;
  options.intra_op_threads = flags.intra_op_threads;
  options.inter_op_threads = flags.inter_op_threads;
  options.worker_timeout_ms = flags.worker_timeout_ms;
  // main() put the security flags into the environment.
  StatusOr<TransportSecurity> security = TransportSecurityFromEnvironment();
  if (!security.ok()) {
    std::fprintf(stderr, "weft server: %s\n", security.status().ToString().c_str());
    return 2;
  }
  options.security = *security;
  const char* insecure = std::getenv("WEFT_INSECURE");
  options.insecure = insecure != nullptr && std::string_view(insecure) == "1";
  // The metrics endpoint first: a refused one must not leave a half-started server behind.
  std::unique_ptr<MetricsEndpoint> metrics;
  if (flags.metrics_port >= 0) {
    MetricsEndpointOptions metrics_options;
    metrics_options.bind_host = flags.metrics_bind;
    metrics_options.port = flags.metrics_port;
    metrics_options.token = options.security.token;
    metrics_options.insecure = options.insecure;
    StatusOr<std::unique_ptr<MetricsEndpoint>> started = MetricsEndpoint::Start(metrics_options);
    if (!started.ok()) {
      std::fprintf(stderr, "weft server: %s\n", started.status().ToString().c_str());
      return IsInvalidArgument(started.status()) ? 2 : 1;
    }
    metrics = std::move(started).value();
  }
  StatusOr<std::unique_ptr<GrpcServer>> server = GrpcServer::Create(options);
  if (!server.ok()) {
    std::fprintf(stderr, "weft server: %s\n", server.status().ToString().c_str());
    // A refused configuration (an unsecured public bind) is bad input.
    return IsInvalidArgument(server.status()) ? 2 : 1;
  }
  std::fprintf(stderr, "weft server: task %s with %d %s device(s) in cluster %s\n",
               (*server)->task_name().c_str(), setup->devices, flags.device_type.c_str(),
               setup->config.cluster.ToFlag().c_str());
  std::fprintf(stdout, "weft server listening on %s\n", (*server)->address().c_str());
  std::fflush(stdout);
  if (metrics != nullptr) {
    std::fprintf(stdout, "weft server metrics at http://%s/metrics\n", metrics->address().c_str());
    std::fflush(stdout);
  }

  unsigned char received = 0;
  while (read(stop_pipe[0], &received, 1) < 0 && errno == EINTR) {
  }
  std::fprintf(stderr, "weft server: %s received, stopping\n",
               received == SIGTERM ? "SIGTERM" : "SIGINT");
  if (metrics != nullptr) metrics->Stop();
  (*server)->Stop();
  return 0;
}

}  // namespace weft::cli
