// MultiWorkerMirroredStrategy (see the header): the in-process server, the collectives across
// workers, and the broadcast of initial values.
#include "weft/distribute/multi_worker_mirrored_strategy.h"

#include <utility>

#include "weft/core/str_util.h"
#include "weft/distribute/mirrored_extended.h"
#include "weft/graph/builder/ops/array_ops.h"
#include "weft/graph/builder/ops/collective_ops.h"
#include "weft/runtime/device_factory.h"

namespace weft::distribute {
namespace {

// MirroredExtended's variables, reductions and updates (the CrossDeviceOps all-reduce across
// workers), plus what several processes need: the collectives in every session, the chief's
// initial values broadcast to every worker, and one writer of checkpoints.
class MultiWorkerMirroredExtended final : public StrategyExtended {
 public:
  explicit MultiWorkerMirroredExtended(const MultiWorkerMirroredStrategy& strategy)
      : strategy_(strategy), mirrored_(strategy) {}

  StatusOr<std::shared_ptr<DistributedVariable>> CreateVariable(
      const Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
      const Initializer& initializer, VariableSynchronization synchronization,
      VariableAggregation aggregation) const override {
    return mirrored_.CreateVariable(scope, name, shape, dtype, initializer, synchronization,
                                    aggregation);
  }
  StatusOr<std::shared_ptr<DistributedVariable>> CreateColocatedVariable(
      const Scope& scope, const DistributedVariable& primary, std::string_view name,
      const TensorShape& shape, DataType dtype, const Initializer& initializer) const override {
    return mirrored_.CreateColocatedVariable(scope, primary, name, shape, dtype, initializer);
  }
  StatusOr<std::vector<Mirrored>> BatchReduceTo(
      const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
      const std::vector<std::vector<std::string>>& destinations) const override {
    return mirrored_.BatchReduceTo(scope, op, values, destinations);
  }
  std::vector<Output> TakeCollectiveOrdering() const override {
    return mirrored_.TakeCollectiveOrdering();
  }
  void SetCollectiveOrdering(std::vector<Output> chain) const override {
    mirrored_.SetCollectiveOrdering(std::move(chain));
  }
  StatusOr<std::vector<Output>> Update(const Scope& scope, const DistributedVariable& variable,
                                       const std::vector<Mirrored>& args,
                                       const UpdateFn& fn) const override {
    return mirrored_.Update(scope, variable, args, fn);
  }
  void ConfigureSession(SessionOptions* options) const override {
    const SessionOptions worker = strategy_.session_options();
    options->collective_executor_mgr = worker.collective_executor_mgr;
    if (worker.device_factories != nullptr) options->device_factories = worker.device_factories;
    if (worker.kernel_registry != nullptr) options->kernel_registry = worker.kernel_registry;
    options->config.set_intra_op_parallelism_threads(worker.config.intra_op_parallelism_threads());
  }
  StatusOr<Output> SynchronizeInitialValues(
      const Scope& scope, const std::vector<std::shared_ptr<DistributedVariable>>&) const override {
    return strategy_.BroadcastVariablesFromChief(scope);
  }
  bool ShouldCheckpoint() const override { return strategy_.is_chief(); }
  std::vector<std::string> CollectiveTransportNames() const override {
    return strategy_.collectives().TransportNames();
  }
  int64_t CrossWorkerCommunicationNanos() const override {
    return strategy_.collectives().CommunicationNanos();
  }
  StatusOr<std::vector<std::vector<double>>> AllGatherFromWorkers(
      const std::vector<double>& values) const override {
    return strategy_.collectives().AllGatherFromTasks(values);
  }
  void AbortCollectives(const Status& status) const override {
    strategy_.collectives().StartAbort(status);
  }
  bool UpdatesAwaitEveryReduction() const override { return strategy_.generation() > 0; }

 private:
  const MultiWorkerMirroredStrategy& strategy_;
  MirroredExtended mirrored_;
};

}  // namespace

StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> MultiWorkerMirroredStrategy::Create(
    MultiWorkerOptions options) {
  const ServerConfig& config = options.server;
  WEFT_RETURN_IF_ERROR(ValidateTask(config.cluster, config.task));
  if (config.cluster.jobs().size() != 1) {
    return InvalidArgument("MultiWorkerMirroredStrategy: the cluster must have one job (every ",
                           "task a worker), not ", config.cluster.jobs().size());
  }
  if (options.devices_per_worker < 1) {
    return InvalidArgument("MultiWorkerMirroredStrategy: devices_per_worker must be at least 1, ",
                           "got ", options.devices_per_worker);
  }
  const DeviceFactoryRegistry& factories =
      options.device_factories != nullptr ? *options.device_factories : DefaultDeviceFactories();
  WEFT_RETURN_IF_ERROR(factories.CheckDeviceType(options.device_type)
                           .WithContext("MultiWorkerMirroredStrategy's device_type"));
  std::vector<std::string> local;
  for (int d = 0; d < options.devices_per_worker; ++d) {
    local.push_back(StrCat("/device:", options.device_type, ":", d));
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> devices, CanonicalDevices(local));
  const int workers = config.cluster.NumTasks(config.task.job);
  AllReduceOptions all_reduce;
  all_reduce.bytes_per_pack = options.bytes_per_pack;
  all_reduce.num_workers = workers;
  all_reduce.order_collectives = true;
  all_reduce.communication_dtype = options.communication_dtype;
  if (options.generation > 0) all_reduce.group_key = options.generation;
  auto cross_device_ops = std::make_unique<AllReduceCrossDeviceOps>(all_reduce);
  AllReduceCrossDeviceOps* all_reduce_ops = cross_device_ops.get();
  std::unique_ptr<MultiWorkerMirroredStrategy> strategy(new MultiWorkerMirroredStrategy(
      std::move(devices), std::move(cross_device_ops), all_reduce_ops, std::move(options)));

  // The server only resolves groups and answers heartbeats: one small device, few threads.
  ServerOptions server_options;
  server_options.server = strategy->options_.server;
  server_options.devices = 1;
  server_options.intra_op_threads = 1;
  server_options.inter_op_threads = 1;
  WEFT_ASSIGN_OR_RETURN(strategy->server_, NewServer(strategy->options_.protocol, server_options));

  const TaskId& task = strategy->options_.server.task;
  DistributedCollectiveOptions collective;
  collective.task_name = strategy->server_->task_name();
  collective.leader_task = StrCat("/job:", task.job, "/replica:0/task:0");
  collective.worker_cache = strategy->server_->worker_cache();
  for (int t = 0; t < workers; ++t) {
    if (t != task.index)
      collective.peer_tasks.push_back(StrCat("/job:", task.job, "/replica:0/task:", t));
  }
  StatusOr<std::string> address =
      strategy->options_.server.cluster.TaskAddress(task.job, task.index);
  if (address.ok()) {
    const std::string host = address->substr(0, address->rfind(':'));
    collective.listen_host = host == "localhost" ? "127.0.0.1" : host;
  }
  if (strategy->options_.force_tcp_collectives) collective.transport = "tcp";
  collective.hostname = strategy->options_.hostname;
  collective.collective_timeout = strategy->options_.collective_timeout;
  collective.heartbeat_timeout_ms = strategy->options_.heartbeat_timeout_ms;
  WEFT_ASSIGN_OR_RETURN(strategy->collectives_,
                        DistributedCollectiveExecutorMgr::Create(std::move(collective)));
  return strategy;
}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(
    std::vector<std::string> devices, std::unique_ptr<AllReduceCrossDeviceOps> cross_device_ops,
    AllReduceCrossDeviceOps* all_reduce, MultiWorkerOptions options)
    : Strategy(std::move(devices), std::move(cross_device_ops),
               options.server.cluster.NumTasks(options.server.task.job), options.server.task.index),
      options_(std::move(options)),
      all_reduce_(all_reduce) {
  set_extended(std::make_unique<MultiWorkerMirroredExtended>(*this));
}

MultiWorkerMirroredStrategy::~MultiWorkerMirroredStrategy() {
  collectives_.reset();
  if (server_ != nullptr) server_->Stop();
}

SessionOptions MultiWorkerMirroredStrategy::session_options() const {
  SessionOptions session;
  (*session.config.mutable_device_count())[options_.device_type] = num_local_replicas();
  session.device_factories = options_.device_factories;
  session.kernel_registry = options_.kernel_registry;
  session.config.set_intra_op_parallelism_threads(options_.intra_op_threads);
  session.collective_executor_mgr = collectives_.get();
  return session;
}

StatusOr<Output> MultiWorkerMirroredStrategy::BroadcastVariablesFromChief(
    const weft::Scope& scope) const {
  std::vector<Output> done;
  const weft::Scope broadcast = scope.NewSubScope("broadcast_from_chief");
  // Run in a step of its own: ordered among themselves, not after the training step's collectives.
  std::vector<Output> training_chain = all_reduce_->TakeOrdering();
  for (const std::shared_ptr<DistributedVariable>& variable : variables()) {
    ops::CollectiveGroupAttrs attrs;
    attrs.group_size = num_replicas_in_sync();
    attrs.group_key = all_reduce_->options().group_key;
    attrs.instance_key = all_reduce_->NewInstanceKey();
    const PartialShape shape(variable->shape());
    for (int r = 0; r < num_local_replicas(); ++r) {
      const weft::Scope on_replica = all_reduce_->Ordered(broadcast, r).WithDevice(devices()[r]);
      const Variable& component = variable->component(r);
      if (is_chief() && r == 0) {
        Output sent =
            ops::CollectiveBroadcastSend(on_replica, component.Read(on_replica), shape, attrs);
        all_reduce_->Remember(r, sent);
        done.push_back(sent);
      } else {
        Output received = ops::CollectiveBroadcastRecv(on_replica, variable->dtype(), shape, attrs);
        all_reduce_->Remember(r, received);
        done.push_back(component.Assign(on_replica, received));
      }
    }
  }
  all_reduce_->SetOrdering(std::move(training_chain));
  WEFT_RETURN_IF_ERROR(broadcast.status());
  return ops::NoOp(broadcast.WithOpName("done").WithControlDependencies(done));
}

}  // namespace weft::distribute
