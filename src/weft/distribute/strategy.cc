// Strategy: device canonicalisation, variable creation, Run's grouping, Reduce, SplitBatch, the
// distributed datasets, and the OneDeviceStrategy / MirroredStrategy factories.
#include "weft/distribute/strategy.h"

#include <set>

#include "weft/core/str_util.h"
#include "weft/distribute/all_reduce_cross_device_ops.h"
#include "weft/distribute/internal/replica_runner.h"
#include "weft/distribute/mirrored_extended.h"
#include "weft/framework/device_name_utils.h"
#include "weft/graph/builder/ops/array_ops.h"

namespace weft::distribute {

constexpr char kLocalWorker[] = "/job:localhost/replica:0/task:0";

namespace {

bool SpansSeveralTasks(const std::vector<std::string>& canonical_devices) {
  std::string first_task;
  for (const std::string& device : canonical_devices) {
    StatusOr<ParsedDeviceName> parsed = ParseDeviceName(device);
    if (!parsed.ok()) continue;
    std::string task = StrCat(parsed->job, "/", parsed->replica, "/", parsed->task);
    if (first_task.empty()) first_task = task;
    if (task != first_task) return true;
  }
  return false;
}

}  // namespace

StatusOr<std::vector<std::string>> Strategy::CanonicalDevices(
    const std::vector<std::string>& devices) {
  if (devices.empty()) return InvalidArgument("a strategy needs at least one device");
  std::vector<std::string> canonical;
  for (size_t i = 0; i < devices.size(); ++i) {
    StatusOr<std::string> name = CanonicalizeDeviceName(devices[i], kLocalWorker);
    if (!name.ok()) return name.status().WithContext(StrCat("strategy device ", i));
    for (size_t j = 0; j < canonical.size(); ++j) {
      if (canonical[j] == *name) {
        return InvalidArgument("strategy devices ", j, " ('", devices[j], "') and ", i, " ('",
                               devices[i], "') are the same device ", *name);
      }
    }
    canonical.push_back(std::move(name).value());
  }
  return canonical;
}

StatusOr<std::shared_ptr<DistributedVariable>> Strategy::CreateVariable(
    const weft::Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
    const Initializer& initializer, VariableSynchronization synchronization,
    VariableAggregation aggregation) const {
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<DistributedVariable> made,
                        extended_->CreateVariable(scope, name, shape, dtype, initializer,
                                                  synchronization, aggregation));
  Remember(made);
  return made;
}

StatusOr<std::shared_ptr<DistributedVariable>> Strategy::CreateVariableInScope(
    const weft::Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
    const Initializer& initializer, const DistributedVariable* colocate_with) const {
  const weft::Scope from_root = scope.WithRootNameScope().WithNoControlDependencies();
  std::shared_ptr<DistributedVariable> made;
  if (colocate_with != nullptr) {
    WEFT_ASSIGN_OR_RETURN(made, extended_->CreateColocatedVariable(from_root, *colocate_with, name,
                                                                   shape, dtype, initializer));
  } else {
    WEFT_ASSIGN_OR_RETURN(made, extended_->CreateVariable(
                                    from_root, name, shape, dtype, initializer,
                                    VariableSynchronization::kOnWrite, VariableAggregation::kNone));
  }
  Remember(made);
  MutexLock lock(mu_);
  scope_variables_.push_back(made);
  return made;
}

void Strategy::Remember(const std::shared_ptr<DistributedVariable>& variable) const {
  MutexLock lock(mu_);
  for (const Variable& component : variable->components()) made_[component.name()] = variable;
}

std::shared_ptr<DistributedVariable> Strategy::FindVariable(const Variable& component) const {
  if (!component) return nullptr;
  MutexLock lock(mu_);
  auto it = made_.find(component.name());
  if (it == made_.end()) return nullptr;
  std::shared_ptr<DistributedVariable> variable = it->second.lock();
  // A name reused by a later graph after the first variable died refers to that graph's variable
  // only if the handle is the same node.
  if (variable == nullptr) return nullptr;
  for (const Variable& mine : variable->components()) {
    if (mine.handle().node() == component.handle().node()) return variable;
  }
  return nullptr;
}

StrategyScope::StrategyScope(const Strategy& strategy)
    : strategy_(strategy),
      creator_scope_([self = &strategy](const weft::Scope& scope, std::string_view name,
                                        const TensorShape& shape, DataType dtype,
                                        const Initializer& initializer,
                                        const VariableOptions& options) {
        return self->CreateInScope(scope, name, shape, dtype, initializer, options);
      }) {}

StrategyScope Strategy::Scope() const { return StrategyScope(*this); }

std::vector<std::shared_ptr<DistributedVariable>> Strategy::variables() const {
  MutexLock lock(mu_);
  return scope_variables_;
}

std::shared_ptr<DistributedVariable> Strategy::CreateRecorded(
    const weft::Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
    const Initializer& initializer, const VariableOptions& options) const {
  StatusOr<std::shared_ptr<DistributedVariable>> created = CreateVariable(
      scope, name, shape, dtype, initializer, options.synchronization, options.aggregation);
  if (!created.ok()) {
    scope.UpdateStatus(created.status());
    return nullptr;
  }
  MutexLock lock(mu_);
  scope_variables_.push_back(*created);
  return *created;
}

Variable Strategy::CreateInScope(const weft::Scope& scope, std::string_view name,
                                 const TensorShape& shape, DataType dtype,
                                 const Initializer& initializer,
                                 const VariableOptions& options) const {
  if (!scope.ok()) return Variable();
  const ReplicaContext* context = CurrentReplicaContext();
  if (context == nullptr || &context->strategy() != this || context->replica_id() == 0) {
    std::shared_ptr<DistributedVariable> created =
        CreateRecorded(scope, name, shape, dtype, initializer, options);
    if (created == nullptr) return Variable();
    if (context != nullptr && &context->strategy() == this) {
      MutexLock lock(mu_);
      run_created_.push_back({std::string(name), shape, dtype, created});
    }
    return created->component(0);
  }
  const int r = context->replica_id();
  MutexLock lock(mu_);
  const int64_t k = run_next_[r]++;
  if (k >= static_cast<int64_t>(run_created_.size())) {
    scope.UpdateStatus(InvalidArgument("Strategy::Scope: replica ", r, " created variable '", name,
                                       "' (its creation ", k, ") but replica 0 created only ",
                                       run_created_.size(), " variables"));
    return Variable();
  }
  const ReplicaCreation& primary = run_created_[k];
  if (primary.name != name || primary.shape != shape || primary.dtype != dtype) {
    scope.UpdateStatus(InvalidArgument(
        "Strategy::Scope: replica ", r, " created variable '", name, "' ", shape.DebugString(), " ",
        DataTypeName(dtype), " as its creation ", k, ", but replica 0 created '", primary.name,
        "' ", primary.shape.DebugString(), " ", DataTypeName(primary.dtype)));
    return Variable();
  }
  return primary.variable->ReplicaComponent(r);
}

StatusOr<std::vector<PerReplica>> Strategy::Run(const weft::Scope& scope,
                                                const ReplicaFn& fn) const {
  WEFT_RETURN_IF_ERROR(scope.status());
  {
    MutexLock lock(mu_);
    run_created_.clear();
    run_next_.assign(num_local_replicas(), 0);
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<std::vector<Output>> outputs,
                        internal::RunReplicas(*this, scope, fn, run_timeout_));
  {
    MutexLock lock(mu_);
    for (int r = 1; r < num_local_replicas(); ++r) {
      if (run_next_[r] < static_cast<int64_t>(run_created_.size())) {
        return InvalidArgument("Strategy::Scope: replica ", r, " created ", run_next_[r],
                               " variables but replica 0 created ", run_created_.size(),
                               "; replica ", r, " never created '", run_created_[run_next_[r]].name,
                               "'");
      }
    }
  }
  for (int r = 1; r < num_local_replicas(); ++r) {
    if (outputs[r].size() != outputs[0].size()) {
      return InvalidArgument("Run: replica ", r, " returned ", outputs[r].size(),
                             " outputs but replica 0 returned ", outputs[0].size());
    }
  }
  std::vector<PerReplica> grouped;
  for (size_t i = 0; i < outputs[0].size(); ++i) {
    std::vector<Output> values;
    for (int r = 0; r < num_local_replicas(); ++r) values.push_back(outputs[r][i]);
    grouped.emplace_back(std::move(values), devices_);
    WEFT_RETURN_IF_ERROR(grouped.back().Validate(StrCat("Run: output ", i)));
  }
  return grouped;
}

StatusOr<Output> Strategy::Reduce(const weft::Scope& scope, ReduceOp op,
                                  const PerReplica& value) const {
  // Across workers every replica must take part in the reduction (an all-reduce); within one
  // process reducing onto one device is enough.
  if (num_workers_ == 1) {
    WEFT_ASSIGN_OR_RETURN(Mirrored reduced,
                          cross_device_ops_->Reduce(scope, op, value, {devices_[0]}));
    return reduced.primary();
  }
  WEFT_ASSIGN_OR_RETURN(Mirrored reduced, cross_device_ops_->Reduce(scope, op, value, devices_));
  // Every local replica's collective must run whenever the result is fetched, or the members on
  // the other devices would wait for it in vain.
  std::vector<Output> others;
  for (int r = 1; r < reduced.num_replicas(); ++r) others.push_back(reduced.value(r));
  if (others.empty()) return reduced.primary();
  return ops::Identity(scope.WithDevice(devices_[0]).WithControlDependencies(others),
                       reduced.primary());
}

StatusOr<Tensor> Strategy::WorkerShare(const Tensor& global_batch, std::string_view what) const {
  if (num_workers_ == 1) return global_batch;
  const int64_t rows = global_batch.dims() > 0 ? global_batch.dim_size(0) : 0;
  if (global_batch.dims() == 0 || rows % num_workers_ != 0) {
    return InvalidArgument(what, " has ", rows, " rows, which do not split over ", num_workers_,
                           " workers (batch the dataset by a multiple of ", num_workers_, ")");
  }
  const int64_t per_worker = rows / num_workers_;
  return global_batch.Slice(per_worker * worker_index_, per_worker * (worker_index_ + 1));
}

StatusOr<std::vector<Tensor>> Strategy::SplitBatch(const Tensor& global_batch) const {
  const int64_t n = num_local_replicas();
  if (global_batch.dims() < 1) {
    return InvalidArgument("SplitBatch: a global batch needs a batch dimension; got a scalar");
  }
  const int64_t batch = global_batch.dim_size(0);
  if (batch % n != 0) {
    return InvalidArgument("SplitBatch: the batch of ", batch, " is not divisible by the ", n,
                           num_workers_ > 1 ? " replicas of this worker" : " replicas in sync");
  }
  std::vector<Tensor> slices;
  const int64_t per_replica = batch / n;
  for (int64_t r = 0; r < n; ++r) {
    slices.push_back(global_batch.Slice(r * per_replica, (r + 1) * per_replica));
  }
  return slices;
}

StatusOr<DistributedDataset> Strategy::ExperimentalDistributeDataset(
    const data::Dataset& dataset) const {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<data::Iterator> made, dataset.MakeIterator());
  std::shared_ptr<data::Iterator> iterator = std::move(made);  // the source must be copyable
  return DistributedDataset(*this, [this, iterator](std::vector<Tensor>* batch) -> StatusOr<bool> {
    data::Element element;
    bool end = false;
    WEFT_RETURN_IF_ERROR(iterator->GetNext(&element, &end));
    if (end) return false;
    for (size_t c = 0; c < element.size(); ++c) {
      WEFT_ASSIGN_OR_RETURN(
          element[c], WorkerShare(element[c], StrCat("ExperimentalDistributeDataset: component ", c,
                                                     " of a batch")));
    }
    *batch = std::move(element);
    return true;
  });
}

StatusOr<DistributedDataset> Strategy::DistributeDatasetsFromFunction(const DatasetFn& fn) const {
  const std::string pipeline = StrCat("DistributeDatasetsFromFunction: input pipeline ",
                                      worker_index_, " of ", num_workers_);
  if (!fn) return InvalidArgument(pipeline, ": no dataset function was given");
  StatusOr<DistributedDataset::BatchSource> source =
      fn(InputContext(num_workers_, worker_index_, num_replicas_in_sync()));
  if (!source.ok()) return source.status().WithContext(pipeline);
  // Calling an empty std::function would throw on the first Next; refuse it here instead.
  if (!*source) return InvalidArgument(pipeline, ": the dataset function returned no source");
  return DistributedDataset(*this, std::move(source).value());
}

OneDeviceStrategy::OneDeviceStrategy(std::vector<std::string> devices,
                                     std::unique_ptr<CrossDeviceOps> cross_device_ops)
    : Strategy(std::move(devices), std::move(cross_device_ops)) {
  set_extended(std::make_unique<MirroredExtended>(*this));
}

MirroredStrategy::MirroredStrategy(std::vector<std::string> devices,
                                   std::unique_ptr<CrossDeviceOps> cross_device_ops)
    : Strategy(std::move(devices), std::move(cross_device_ops)) {
  set_extended(std::make_unique<MirroredExtended>(*this));
}

StatusOr<std::unique_ptr<OneDeviceStrategy>> OneDeviceStrategy::Create(const std::string& device) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> devices, CanonicalDevices({device}));
  return std::unique_ptr<OneDeviceStrategy>(
      new OneDeviceStrategy(std::move(devices), std::make_unique<ReductionToOneDevice>()));
}

StatusOr<std::unique_ptr<MirroredStrategy>> MirroredStrategy::Create(
    const std::vector<std::string>& devices, std::unique_ptr<CrossDeviceOps> cross_device_ops) {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> canonical, CanonicalDevices(devices));
  if (cross_device_ops == nullptr) {
    // Replicas on several tasks of a cluster (in-graph replication through a master) all-reduce
    // through the servers' collective transports, like MultiWorkerMirroredStrategy's workers; the
    // collectives then cross processes, whose transports run one operation at a time, so each
    // replica's are chained in one order.
    AllReduceOptions all_reduce;
    all_reduce.order_collectives = SpansSeveralTasks(canonical);
    cross_device_ops = std::make_unique<AllReduceCrossDeviceOps>(all_reduce);
  }
  return std::unique_ptr<MirroredStrategy>(
      new MirroredStrategy(std::move(canonical), std::move(cross_device_ops)));
}

}  // namespace weft::distribute
