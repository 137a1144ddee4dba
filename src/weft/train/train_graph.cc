#include "weft/train/train_graph.h"

#include <algorithm>

#include "weft/core/str_util.h"
#include "weft/distributed/cluster_spec.h"
#include "weft/runtime/cpu_device.h"
#include "weft/train/optimizer.h"

namespace weft::train::internal {
namespace {

StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(const TrainOptions& options) {
  if (options.optimizer == "sgd") return NewGradientDescentOptimizer(options.learning_rate);
  if (options.optimizer == "momentum") return NewMomentumOptimizer(options.learning_rate, 0.9);
  if (options.optimizer == "adam") return NewAdamOptimizer(options.learning_rate);
  return InvalidArgument("unknown optimizer '", options.optimizer,
                         "' (expected sgd, momentum or adam)");
}

// Adds the checkpoint ops of `objects` to the graph when the run saves checkpoints.
Status AddCheckpoints(const Scope& root, checkpoint::CheckpointObjects objects,
                      const TrainOptions& options, const TrainCallbacks& callbacks,
                      TrainGraph* graph) {
  if (options.checkpoint_dir.empty()) return Status::OK();
  TrainCheckpointOptions checkpoint_options;
  checkpoint_options.directory = options.checkpoint_dir;
  checkpoint_options.save_every_steps = options.save_every_steps;
  checkpoint_options.keep = options.keep_checkpoints;
  checkpoint_options.async = options.async_checkpoints;
  checkpoint_options.writer =
      !options.worker_cluster.has_value() || options.worker_cluster->task.index == 0;
  checkpoint_options.report = callbacks.on_checkpoint;
  WEFT_ASSIGN_OR_RETURN(graph->checkpoints,
                        TrainCheckpoints::Create(root, std::move(objects), checkpoint_options));
  return Status::OK();
}

void AddVariableReads(const Scope& scope, const BuiltModel& model, TrainGraph* graph) {
  for (const Variable& variable : model.variables) {
    graph->variable_reads.push_back(variable.Read(scope.NewSubScope("fingerprint")).name());
  }
}

// This worker's share of the host's cores: the workers of one host (same address host) split
// them, since each one's threads would otherwise fight the others' (measured with W1 on 2 workers
// of the 2-core machine: ~110k images/s at 1 thread each, ~70-95k at 2).
int CoresPerLocalWorker(const ServerConfig& config) {
  auto host_of = [&](int task) {
    StatusOr<std::string> address = config.cluster.TaskAddress(config.task.job, task);
    return address.ok() ? address->substr(0, address->rfind(':')) : std::string();
  };
  const std::string mine = host_of(config.task.index);
  int local = 0;
  for (int t = 0; t < config.cluster.NumTasks(config.task.job); ++t) local += host_of(t) == mine;
  return std::max(1, NumSchedulableCpus() / std::max(1, local));
}

StatusOr<std::unique_ptr<distribute::Strategy>> MakeStrategy(
    const TrainOptions& options, const std::vector<std::string>& devices) {
  if (options.strategy == "multi_worker_mirrored") {
    if (!options.worker_cluster.has_value()) {
      return InvalidArgument(
          "strategy multi_worker_mirrored needs a cluster of workers: run under ",
          "`weft launch`, or set WEFT_CONFIG or TF_CONFIG");
    }
    distribute::MultiWorkerOptions multi;
    multi.server = *options.worker_cluster;
    multi.devices_per_worker = static_cast<int>(devices.size());
    multi.force_tcp_collectives = options.force_tcp_collectives;
    multi.hostname = options.hostname;
    multi.collective_timeout = std::chrono::milliseconds(options.collective_timeout_ms);
    multi.intra_op_threads = options.intra_op_threads > 0
                                 ? options.intra_op_threads
                                 : CoresPerLocalWorker(*options.worker_cluster);
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<distribute::MultiWorkerMirroredStrategy> strategy,
                          distribute::MultiWorkerMirroredStrategy::Create(std::move(multi)));
    return std::unique_ptr<distribute::Strategy>(std::move(strategy));
  }
  if (options.strategy == "one_device") {
    if (devices.size() != 1) {
      return InvalidArgument("strategy one_device runs on 1 device, not ", devices.size(),
                             " (use mirrored for several)");
    }
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<distribute::OneDeviceStrategy> strategy,
                          distribute::OneDeviceStrategy::Create(devices[0]));
    return std::unique_ptr<distribute::Strategy>(std::move(strategy));
  }
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<distribute::MirroredStrategy> strategy,
                        distribute::MirroredStrategy::Create(devices));
  return std::unique_ptr<distribute::Strategy>(std::move(strategy));
}

}  // namespace

// Today's single-device graph: the model in the root scope, no strategy.
StatusOr<TrainGraph> BuildPlainGraph(const TrainOptions& options, const TrainCallbacks& callbacks) {
  Scope root = Scope::NewRootScope();
  WEFT_ASSIGN_OR_RETURN(BuiltModel model, BuildModel(root, options.model, options.seed));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer, MakeOptimizer(options));
  WEFT_ASSIGN_OR_RETURN(Output train_op, optimizer->Minimize(root, model.loss, model.variables));
  std::vector<Output> initializers = model.initializers;
  initializers.insert(initializers.end(), optimizer->initializers().begin(),
                      optimizer->initializers().end());
  Output init = ops::NoOp(root.WithOpName("init").WithControlDependencies(initializers));
  TrainGraph result;
  AddVariableReads(root, model, &result);
  checkpoint::CheckpointObjects objects;
  objects.variables = model.variables;
  objects.variables.insert(objects.variables.end(), optimizer->variables().begin(),
                           optimizer->variables().end());
  WEFT_RETURN_IF_ERROR(AddCheckpoints(root, std::move(objects), options, callbacks, &result));
  WEFT_ASSIGN_OR_RETURN(result.graph, root.ToGraphDef());
  result.owner = root.graph_as_shared_ptr();
  result.init = init.name();
  result.replicas.push_back(std::move(model));
  result.targets.push_back(train_op.name());
  return result;
}

// The model once per replica through the strategy, written as for one device: inside
// strategy.Scope() every Variable::Create (the model's and the optimizer's slots) makes a mirrored
// variable — replica 0 creates it, every replica uses its component — and Minimize all-reduces the
// gradients through the replica's current context.
StatusOr<TrainGraph> BuildReplicatedGraph(const TrainOptions& options,
                                          const std::vector<std::string>& devices,
                                          const TrainCallbacks& callbacks) {
  TrainGraph result;
  WEFT_ASSIGN_OR_RETURN(result.strategy, MakeStrategy(options, devices));
  const distribute::Strategy& strategy = *result.strategy;
  const int n = strategy.num_local_replicas();
  Scope root = Scope::NewRootScope();
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer, MakeOptimizer(options));
  result.replicas.resize(n);
  std::vector<Output> train_ops(n);
  auto replica_fn = [&](distribute::ReplicaContext& context,
                        const Scope& replica_scope) -> StatusOr<std::vector<Output>> {
    const int r = context.replica_id();
    WEFT_ASSIGN_OR_RETURN(result.replicas[r],
                          BuildModel(replica_scope, options.model, options.seed));
    const BuiltModel& model = result.replicas[r];
    WEFT_ASSIGN_OR_RETURN(train_ops[r],
                          optimizer->Minimize(replica_scope, model.loss, model.variables));
    WEFT_RETURN_IF_ERROR(replica_scope.status());
    AddVariableReads(replica_scope, model, &result);
    return std::vector<Output>{model.loss};
  };
  distribute::StrategyScope in_scope = strategy.Scope();
  WEFT_ASSIGN_OR_RETURN(std::vector<distribute::PerReplica> losses, strategy.Run(root, replica_fn));
  result.multi_worker = dynamic_cast<const distribute::MultiWorkerMirroredStrategy*>(&strategy);
  if (const auto* multi = result.multi_worker) {
    WEFT_ASSIGN_OR_RETURN(Output loss, strategy.Reduce(root.NewSubScope("global_loss"),
                                                       distribute::ReduceOp::kMean, losses[0]));
    result.global_loss = loss.name();
    WEFT_ASSIGN_OR_RETURN(Output broadcast, multi->BroadcastVariablesFromChief(root));
    result.broadcast = broadcast.name();
  }
  std::vector<Output> initializers;
  for (const auto& variable : strategy.variables()) initializers.push_back(variable->initializer());
  initializers.insert(initializers.end(), optimizer->initializers().begin(),
                      optimizer->initializers().end());
  Output init = ops::NoOp(root.WithOpName("init").WithControlDependencies(initializers));
  checkpoint::CheckpointObjects objects;
  objects.distributed_variables = strategy.variables();
  objects.replicas = strategy.num_replicas_in_sync();
  WEFT_RETURN_IF_ERROR(AddCheckpoints(root, std::move(objects), options, callbacks, &result));
  WEFT_ASSIGN_OR_RETURN(result.graph, root.ToGraphDef());
  result.owner = root.graph_as_shared_ptr();
  result.init = init.name();
  for (const Output& train_op : train_ops) result.targets.push_back(train_op.name());
  return result;
}

}  // namespace weft::train::internal
