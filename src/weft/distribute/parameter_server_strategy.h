// ParameterServerStrategy: asynchronous data parallelism over a cluster of workers and parameter
// servers, as the reference's tf.distribute.ParameterServerStrategy. The coordinator (the `chief`
// task: this process, whose server Create starts) builds the graph once, with one replica on
// "/job:worker/replica:0/device:CPU:0" — no task — and its variables on the `ps` tasks
// (round-robin, whole; CreateShardedVariable cuts a table across them). Every worker runs that
// graph in a session of its own whose device filters put the replica on that worker
// (WorkerSessionOptions), and all these sessions share the ps tasks' state, so each worker reads
// the variables where they live and applies its own gradients there, without waiting for the
// others (num_replicas_in_sync() is 1: nothing is reduced across workers). A ClusterCoordinator
// (coordinator/cluster_coordinator.h) dispatches the steps; Model::Fit does so itself.
//
//   auto strategy = ParameterServerStrategy::Create({.server = resolved.config}).value();
//   model.Compile(..., {.strategy = strategy.get()});  // Fit: steps on every worker
//
// Sessions made from its options must be closed before the strategy is destroyed. Thread-safe
// like Strategy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weft/distribute/sharding/sharded_variable.h"
#include "weft/distribute/strategy.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/distributed/server.h"

namespace weft::distribute {

struct ParameterServerOptions {
  // The cluster (jobs "worker" and "ps", and this coordinator's own task, usually "chief") and
  // this process's task in it.
  ServerConfig server{};
  std::string protocol = "grpc";
  // How long the master waits for any one task to answer (a new session's wait for the servers
  // to come up, and the liveness probes of running steps).
  int64_t worker_timeout_ms = 30000;
  // Tables above this many bytes made by CreateShardedVariable are cut across every ps task
  // (Partitioner::AcrossAll); smaller ones stay whole.
  int64_t shard_threshold_bytes = 256 << 10;
  int intra_op_threads = 0;  // of the coordinator's own server; 0: one per core
};

class ParameterServerStrategy final : public Strategy {
 public:
  // InvalidArgument naming what is missing for a cluster without a "ps" or a "worker" job, or
  // when this process's task is a worker or a ps (the coordinator runs elsewhere); the server's
  // errors otherwise.
  static StatusOr<std::unique_ptr<ParameterServerStrategy>> Create(ParameterServerOptions options);
  ~ParameterServerStrategy() override;

  int num_worker_tasks() const { return num_worker_tasks_; }
  int num_ps_tasks() const { return num_ps_tasks_; }
  int64_t shard_threshold_bytes() const { return options_.shard_threshold_bytes; }
  // "/job:ps/replica:0/task:<i>/device:CPU:0".
  std::string PsDevice(int ps_task) const;
  // "/job:worker/replica:0/task:<i>".
  std::string WorkerTask(int worker) const;
  // The session of `worker`: its task and the ps tasks, sharing the ps tasks' state.
  SessionOptions WorkerSession(int worker) const;

  // A table cut along its first dimension by Partitioner::AcrossAll(num_ps_tasks(),
  // shard_threshold_bytes), shard i on ps task i % num_ps_tasks(). It is not in variables(): run
  // its ShardedVariable::initializers() yourself.
  ShardedVariable CreateShardedVariable(const weft::Scope& scope, std::string_view name,
                                        const TensorShape& shape, DataType dtype,
                                        const Initializer& initializer) const;

 private:
  ParameterServerStrategy(ParameterServerOptions options, int num_workers, int num_ps);

  const ParameterServerOptions options_;
  const int num_worker_tasks_;
  const int num_ps_tasks_;
  std::unique_ptr<ServerInterface> server_;
  ClusterSpec cluster_;  // options_'s, with this task at the address it serves on
};

}  // namespace weft::distribute
