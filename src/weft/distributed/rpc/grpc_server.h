// GrpcServer: one task of a cluster served over gRPC — the transport-neutral Server
// (distributed/server.h: devices, Worker, Master) bound to both services on one gRPC port, and the
// bulk data port beside it for large tensors. Create() binds and starts serving (port 0 in the
// task's address picks a free port; address() tells which); Stop() shuts down gracefully.
// Both ports and the server's own calls to other tasks use the options' TransportSecurity; a
// server with neither TLS nor a token binds only to loopback unless `insecure`. Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/distributed/rpc/transport_security.h"
#include "weft/distributed/server.h"

namespace weft {

struct GrpcServerOptions {
  ServerConfig server;  // the cluster and this server's task in it
  // The interface to bind; the task's port comes from the cluster (0: ephemeral).
  std::string bind_host = "127.0.0.1";
  int devices = 1;                  // compute devices of this task, of `device_type`
  std::string device_type = "CPU";  // a type the device factories know (ServerOptions)
  int intra_op_threads = 0;         // 0: one per core, shared out between the devices
  int inter_op_threads = 0;         // 0: one per core
  // How long the master waits for any one worker to answer (ServerOptions::worker_timeout_ms).
  int64_t worker_timeout_ms = 30000;
  // Mutual TLS on the gRPC port and a token on both ports and on calls to other tasks.
  TransportSecurity security;
  // Lets a server without TLS or a token listen beyond loopback.
  bool insecure = false;
};

// address() is the real port when the cluster said 0; Stop() stops accepting calls, cancels what
// is in flight and waits for it.
class GrpcServer : public ServerInterface {
 public:
  static StatusOr<std::unique_ptr<GrpcServer>> Create(const GrpcServerOptions& options);
};

// Makes NewServer("grpc", ...) start a GrpcServer, bound to the task's host when that is a
// loopback name and to every interface otherwise, secured by TransportSecurityFromEnvironment()
// (WEFT_INSECURE=1 is the `insecure` option).
void RegisterGrpcServerFactory();

}  // namespace weft
