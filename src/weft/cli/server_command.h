// `weft server`: runs one task of a cluster (GrpcServer) until SIGTERM or SIGINT. The cluster comes
// from --cluster, else from the environment (distributed/cluster/cluster_resolver.h: WEFT_CONFIG,
// TF_CONFIG, or Slurm / Open MPI ranks meeting at a coordinator), else is a one-task cluster on an
// ephemeral port. Once serving it prints "weft server listening on HOST:PORT" on stdout, and with
// --metrics-port then "weft server metrics at http://HOST:PORT/metrics".
#pragma once

#include <CLI/CLI.hpp>

namespace weft::cli {

struct ServerFlags {
  std::string cluster;  // "worker=host:port,host:port;ps=host:port"
  std::string job;      // default "worker" (or WEFT_CONFIG's task.type)
  int task = -1;        // default 0 (or WEFT_CONFIG's task.index)
  int devices = 1;
  std::string device_type = "CPU";  // the type of the task's compute devices
  bool devices_given = false;       // else WEFT_DEVICES_PER_WORKER, when set, gives the devices
  std::string bind_host;            // "": 127.0.0.1, or 0.0.0.0 for Slurm / Open MPI ranks
  std::string coordinator;  // "HOST:PORT" for Slurm / Open MPI ranks (else WEFT_COORDINATOR)
  int intra_op_threads = 0;
  int inter_op_threads = 0;
  int64_t worker_timeout_ms = 30000;
  int metrics_port = -1;                   // -1: no metrics endpoint; 0: an ephemeral port
  std::string metrics_bind = "127.0.0.1";  // where the metrics endpoint listens
};

CLI::App* AddServerCommand(CLI::App& app, ServerFlags& flags);

// Returns the process exit code: 0 after a clean stop, 2 for a bad cluster or task, 1 when the
// server cannot start (port taken).
int RunServerCommand(const ServerFlags& flags);

}  // namespace weft::cli
