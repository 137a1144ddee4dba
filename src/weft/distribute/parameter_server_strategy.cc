// ParameterServerStrategy and its policy: variables whole on the ps tasks in turn, no reduction
// across workers (each applies its own gradients), one session per worker.
#include "weft/distribute/parameter_server_strategy.h"

#include <atomic>
#include <map>

#include "weft/core/str_util.h"
#include "weft/distribute/aggregating_variable.h"

namespace weft::distribute {
namespace {

constexpr char kReplicaDevice[] = "/job:worker/replica:0/device:CPU:0";

class ParameterServerExtended final : public StrategyExtended {
 public:
  explicit ParameterServerExtended(const ParameterServerStrategy& strategy) : strategy_(strategy) {}

  StatusOr<std::shared_ptr<DistributedVariable>> CreateVariable(
      const Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
      const Initializer& initializer, VariableSynchronization /*synchronization*/,
      VariableAggregation aggregation) const override {
    // One replica per step: a kOnRead variable (a metric's totals) is one more shared variable,
    // which every worker's steps add to.
    const int ps = next_ps_.fetch_add(1) % strategy_.num_ps_tasks();
    return CreateAggregatingVariable(scope, name, shape, dtype, initializer, strategy_.PsDevice(ps),
                                     aggregation);
  }

  StatusOr<std::shared_ptr<DistributedVariable>> CreateColocatedVariable(
      const Scope& scope, const DistributedVariable& primary, std::string_view name,
      const TensorShape& shape, DataType dtype, const Initializer& initializer) const override {
    return CreateAggregatingVariable(scope, name, shape, dtype, initializer, primary.devices()[0],
                                     VariableAggregation::kNone);
  }

  StatusOr<std::vector<Mirrored>> BatchReduceTo(
      const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
      const std::vector<std::vector<std::string>>& destinations) const override {
    return BatchReduceByDestination(strategy_.cross_device_ops(), scope, op, values, destinations);
  }

  // The update runs on the variable's ps task with the worker's values, which the partitioner
  // sends there (a gradient crosses once, to the one task that needs it).
  StatusOr<std::vector<Output>> Update(const Scope& scope, const DistributedVariable& variable,
                                       const std::vector<Mirrored>& args,
                                       const UpdateFn& fn) const override {
    std::vector<Output> values;
    for (size_t a = 0; a < args.size(); ++a) {
      if (args[a].num_replicas() != 1) {
        return InvalidArgument("update of variable '", variable.name(), "': argument ", a, " has ",
                               args[a].num_replicas(),
                               " values; a parameter-server step has one replica");
      }
      values.push_back(args[a].value(0));
    }
    std::vector<Output> updates;
    for (int i = 0; i < variable.num_components(); ++i) {
      WEFT_ASSIGN_OR_RETURN(Output update, fn(scope.WithDevice(variable.devices()[i]), i, values));
      updates.push_back(update);
    }
    WEFT_RETURN_IF_ERROR(scope.status());
    return updates;
  }

  void ConfigureSession(SessionOptions* options) const override {
    // Worker 0's session: the model initialises, evaluates and checkpoints through it.
    SessionOptions worker0 = strategy_.WorkerSession(0);
    options->target = worker0.target;
    options->config.clear_device_count();  // the servers have their devices
    options->config.clear_device_filters();
    options->config.MergeFrom(worker0.config);
  }

  std::vector<SessionOptions> WorkerSessionOptions(
      const SessionOptions& configured) const override {
    std::vector<SessionOptions> sessions;
    for (int w = 0; w < strategy_.num_worker_tasks(); ++w) {
      SessionOptions session = configured;
      const SessionOptions worker = strategy_.WorkerSession(w);
      *session.config.mutable_device_filters() = worker.config.device_filters();
      sessions.push_back(std::move(session));
    }
    return sessions;
  }

  StatusOr<Output> SynchronizeInitialValues(
      const Scope&, const std::vector<std::shared_ptr<DistributedVariable>>&) const override {
    return Output();  // every variable exists once, on its ps task
  }
  bool ShouldCheckpoint() const override { return true; }
  int64_t NumShards(const TensorShape& shape, DataType dtype) const override {
    return Partitioner::AcrossAll(strategy_.num_ps_tasks(), strategy_.shard_threshold_bytes())
        .NumShards(shape, dtype);
  }

 private:
  const ParameterServerStrategy& strategy_;
  mutable std::atomic<int> next_ps_{0};
};

Status CheckCluster(const ServerConfig& config) {
  const ClusterSpec& cluster = config.cluster;
  if (cluster.NumTasks("ps") < 1) {
    return InvalidArgument(
        "the parameter-server strategy needs a 'ps' job with at least one task; the cluster "
        "has ",
        cluster.empty() ? std::string("no jobs") : StrCat("jobs ", cluster.ToFlag()),
        " (start it with `weft launch --workers N --ps M -- ...`)");
  }
  if (cluster.NumTasks("worker") < 1) {
    return InvalidArgument(
        "the parameter-server strategy needs a 'worker' job with at least one task; the "
        "cluster has jobs ",
        cluster.ToFlag());
  }
  if (config.task.job == "worker" || config.task.job == "ps") {
    return InvalidArgument(
        "the parameter-server strategy runs on the coordinator (the chief), "
        "not on task ",
        config.task.job, ":", config.task.index, ", which serves steps (`weft server`)");
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<ParameterServerStrategy>> ParameterServerStrategy::Create(
    ParameterServerOptions options) {
  WEFT_RETURN_IF_ERROR(CheckCluster(options.server));
  const int workers = options.server.cluster.NumTasks("worker");
  const int ps = options.server.cluster.NumTasks("ps");
  std::unique_ptr<ParameterServerStrategy> strategy(
      new ParameterServerStrategy(std::move(options), workers, ps));
  ServerOptions server_options;
  server_options.server = strategy->options_.server;
  server_options.worker_timeout_ms = strategy->options_.worker_timeout_ms;
  server_options.intra_op_threads = strategy->options_.intra_op_threads;
  WEFT_ASSIGN_OR_RETURN(strategy->server_, NewServer(strategy->options_.protocol, server_options));
  // The coordinator's own address as it is served (its port may have been 0).
  std::map<std::string, std::vector<std::string>> jobs = strategy->options_.server.cluster.jobs();
  const TaskId& task = strategy->options_.server.task;
  jobs[task.job][static_cast<size_t>(task.index)] = strategy->server_->address();
  WEFT_ASSIGN_OR_RETURN(strategy->cluster_, ClusterSpec::FromJobs(std::move(jobs)));
  return strategy;
}

ParameterServerStrategy::ParameterServerStrategy(ParameterServerOptions options, int num_workers,
                                                 int num_ps)
    : Strategy({kReplicaDevice}, std::make_unique<ReductionToOneDevice>()),
      options_(std::move(options)),
      num_worker_tasks_(num_workers),
      num_ps_tasks_(num_ps) {
  set_extended(std::make_unique<ParameterServerExtended>(*this));
}

ParameterServerStrategy::~ParameterServerStrategy() {
  if (server_ != nullptr) server_->Stop();
}

std::string ParameterServerStrategy::PsDevice(int ps_task) const {
  return StrCat("/job:ps/replica:0/task:", ps_task, "/device:CPU:0");
}

std::string ParameterServerStrategy::WorkerTask(int worker) const {
  return StrCat("/job:worker/replica:0/task:", worker);
}

SessionOptions ParameterServerStrategy::WorkerSession(int worker) const {
  SessionOptions session;
  session.target = server_->local_target();
  // The worker first: nodes without a device run there.
  session.config.add_device_filters(WorkerTask(worker));
  session.config.add_device_filters("/job:ps");
  session.config.set_share_session_state(true);
  session.config.set_worker_timeout_in_ms(options_.worker_timeout_ms);
  // The whole cluster goes with the session, so that servers started on ephemeral ports (which
  // know only themselves) reach each other: a worker pulls the variables from the ps tasks.
  *session.config.mutable_cluster_def() = cluster_.ToProto();
  return session;
}

ShardedVariable ParameterServerStrategy::CreateShardedVariable(
    const weft::Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
    const Initializer& initializer) const {
  std::vector<std::string> devices;
  for (int ps = 0; ps < num_ps_tasks_; ++ps) devices.push_back(PsDevice(ps));
  return ShardedVariable::Create(scope, name, shape, dtype, initializer,
                                 Partitioner::AcrossAll(num_ps_tasks_, shard_threshold_bytes()),
                                 devices);
}

}  // namespace weft::distribute
