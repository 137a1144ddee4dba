// GrpcServer: one task of a cluster served over gRPC — the transport-neutral Server
// (distributed/server.h: devices, Worker, Master) bound to both services on one gRPC port, and the
// bulk data port beside it for large tensors. Create() binds and starts serving (port 0 in the
// task's address picks a free port; address() tells which); Stop() shuts down gracefully.
// Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "weft/distributed/cluster_spec.h"

namespace weft {

struct GrpcServerOptions {
  ServerConfig server;  // the cluster and this server's task in it
  // The interface to bind; the task's port comes from the cluster (0: ephemeral).
  std::string bind_host = "127.0.0.1";
  int devices = 1;           // CPU devices of this task
  int intra_op_threads = 0;  // 0: one per core, shared out between the devices
  int inter_op_threads = 0;  // 0: one per core
  // How long the master waits for any one worker to answer (ServerOptions::worker_timeout_ms).
  int64_t worker_timeout_ms = 30000;
};

class GrpcServer {
 public:
  static StatusOr<std::unique_ptr<GrpcServer>> Create(const GrpcServerOptions& options);
  virtual ~GrpcServer() = default;

  // "host:port" it serves on (the real port when the cluster said 0).
  virtual std::string address() const = 0;
  // "/job:worker/replica:0/task:0".
  virtual const std::string& task_name() const = 0;
  // Stops accepting calls, cancels what is in flight and waits for it; idempotent.
  virtual void Stop() = 0;
};

}  // namespace weft
