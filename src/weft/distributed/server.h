// Server: the transport-neutral assembly of one task of a cluster: its devices (of the configured
// type, beside CPU:0), the inter-op
// and master thread pools, the in-process Worker, the worker cache (made by the transport's
// factory) and the Master, with the op and kernel registries chosen here. A transport
// (distributed/rpc/grpc_server) only binds the Worker and the Master to its services.
// Thread-safe once created; destruction goes master, worker, worker cache, pools, devices.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "weft/core/statusor.h"
#include "weft/core/thread_pool.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/distributed/master/master.h"
#include "weft/distributed/worker/worker.h"
#include "weft/distributed/worker/worker_cache.h"
#include "weft/runtime/device_mgr.h"

namespace weft {

// Builds the worker cache of `cluster` as seen from `local_task`, whose in-process worker is
// `local_worker` (reached without the transport; it outlives the cache).
using WorkerCacheFactory = std::function<StatusOr<std::unique_ptr<WorkerCacheInterface>>(
    const ClusterSpec& cluster, const std::string& local_task, WorkerInterface* local_worker)>;

struct ServerOptions {
  ServerConfig server;  // the cluster and this server's task in it
  int devices = 1;      // devices of `device_type` of this task
  // The type of the task's compute devices, made by `device_factories` (null: Weft's own) and run
  // with `kernel_registry` (null: every kernel of Weft). A type other than CPU comes beside CPU:0.
  std::string device_type = "CPU";
  const DeviceFactoryRegistry* device_factories = nullptr;
  const KernelRegistry* kernel_registry = nullptr;
  // 0: this task's share of its host's cores (the cores over the cluster's tasks on this host),
  // shared out between the devices.
  int intra_op_threads = 0;
  int inter_op_threads = 0;  // 0: one per core
  // How long the master waits for any one worker to answer (MasterEnv::worker_timeout_ms).
  int64_t worker_timeout_ms = 30000;
  // The transport's caches: for the server's cluster, and for sessions that bring their own.
  WorkerCacheFactory worker_cache_factory;
};

class Server {
 public:
  // InvalidArgument for a task that is not in the cluster, fewer than one device or a device type
  // no factory makes.
  static StatusOr<std::unique_ptr<Server>> Create(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // "/job:worker/replica:0/task:0".
  const std::string& task_name() const { return task_name_; }
  Worker* worker() { return worker_.get(); }
  Master* master() { return master_.get(); }
  // Reaches every task of the server's cluster (this one without the transport).
  WorkerCacheInterface* worker_cache() { return worker_cache_.get(); }
  // The target ("local://...") of this server's master for sessions in this process (no RPC;
  // master/local_master.h); valid until the server is destroyed.
  const std::string& local_target() const { return local_target_; }

 private:
  explicit Server(ServerOptions options) : options_(std::move(options)) {}
  Status Start();

  const ServerOptions options_;
  std::string task_name_;
  // Declared in construction order, destroyed in reverse.
  std::unique_ptr<DeviceMgr> devices_;
  std::unique_ptr<ThreadPool> compute_pool_;
  std::unique_ptr<ThreadPool> master_pool_;
  WorkerEnv worker_env_;
  // Declared before the worker it returns for this task, so the worker goes first.
  std::unique_ptr<WorkerCacheInterface> worker_cache_;
  std::unique_ptr<Worker> worker_;
  MasterEnv master_env_;
  std::unique_ptr<Master> master_;
  std::string local_target_;  // unregistered first on destruction
};

// What code that only starts a server sees of it (the in-process server of a multi-worker
// strategy's worker): the transport's server behind an interface, so that layers above
// distributed/ start one without linking the transport. Thread-safe.
class ServerInterface {
 public:
  virtual ~ServerInterface() = default;
  // "host:port" it serves on.
  virtual std::string address() const = 0;
  // "/job:worker/replica:0/task:0".
  virtual const std::string& task_name() const = 0;
  // Reaches every task of the cluster, this one in-process.
  virtual WorkerCacheInterface* worker_cache() = 0;
  // The target of this server's master for NewSession in this process (no RPC), as
  // Server::local_target().
  virtual const std::string& local_target() const = 0;
  // Stops serving; idempotent.
  virtual void Stop() = 0;
};

// Starts a server over one transport; ServerOptions::worker_cache_factory is the transport's own.
using ServerFactory =
    std::function<StatusOr<std::unique_ptr<ServerInterface>>(const ServerOptions& options)>;

// Makes NewServer serve `protocol` ("grpc": rpc/grpc_server.h's RegisterGrpcServerFactory).
// Thread-safe; a later registration of a protocol replaces the earlier one.
void RegisterServerFactory(const std::string& protocol, ServerFactory factory);
// NotFound naming the protocol when no transport registered it.
StatusOr<std::unique_ptr<ServerInterface>> NewServer(const std::string& protocol,
                                                     const ServerOptions& options);

}  // namespace weft
