// Strategy: the data-parallel training API. A strategy owns a list of devices (one replica each),
// a CrossDeviceOps and its distribution policy (extended(), see strategy_extended.h: where
// variables live, how values are reduced and where updates run), creates distributed variables,
// runs a per-replica graph building function once per replica (Run), reduces per-replica values
// (Reduce) and splits a global batch into this worker's share and per-replica slices (WorkerShare,
// SplitBatch, and the distributed datasets built on them).
//
//   auto strategy = MirroredStrategy::Create({"/cpu:0", "/cpu:1"}).value();
//   auto w = strategy->CreateVariable(root, "w", {4, 2}, DataType::kFloat,
//                                     Initializer::GlorotUniform(), VariableSynchronization::kAuto,
//                                     VariableAggregation::kMean).value();
//   auto losses = strategy->Run(root, [&](ReplicaContext& ctx, const weft::Scope& s)
//                                         -> StatusOr<std::vector<Output>> { ... });
//
// Run calls fn once per replica, replica r under device devices()[r], replica 0 in the caller's
// name scope (so its variables are named as on one device) and replica r > 0 under "replica_<r>".
// Like the reference's MirroredStrategy, each replica runs on a thread of its own but the threads
// take turns — exactly one builds the graph at a time — and a replica that reaches
// ReplicaContext::MergeCall pauses until every replica has reached it (see replica_context.h). Run
// itself must not be called concurrently on graphs sharing a Scope.
//
// Scope() (the reference's `with strategy.scope()`): while the returned StrategyScope lives, every
// Variable::Create on this thread — and on the replica threads of a Run started from it — makes a
// distributed variable (with the synchronization and aggregation of the VariableOptions passed to
// Variable::Create: by default kAuto and kNone, a MirroredVariable) and returns one component:
//  - outside Run (cross-replica context), a new DistributedVariable's component 0;
//  - inside Run, replica 0 creates the DistributedVariable and gets component 0; replica r > 0
//    gets component r of the variable replica 0 created k-th for its own k-th creation (like the
//    reference's shared variable creator). A creation whose name, shape or dtype differs from
//    replica 0's k-th, or one beyond replica 0's count, is an InvalidArgument recorded in the
//    scope naming the variable; a replica creating fewer variables than replica 0 fails Run.
// variables() lists every DistributedVariable made this way (run their initializer()s).
//
// Devices are canonicalised under "/job:localhost/replica:0/task:0" (so "/cpu:1" becomes
// "/job:localhost/replica:0/task:0/device:CPU:1"), the names of a local DirectSession's devices.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"
#include "weft/core/tensor.h"
#include "weft/data/dataset.h"
#include "weft/distribute/cross_device_ops.h"
#include "weft/distribute/distributed_dataset.h"
#include "weft/distribute/distributed_variable.h"
#include "weft/distribute/input_context.h"
#include "weft/distribute/replica_context.h"
#include "weft/distribute/strategy_extended.h"

namespace weft::distribute {

class StrategyScope;

class Strategy {
 public:
  // Builds one replica's part of the graph in `replica_scope`; returns that replica's outputs
  // (every replica must return as many).
  using ReplicaFn = std::function<StatusOr<std::vector<Output>>(ReplicaContext& context,
                                                                const weft::Scope& replica_scope)>;
  // Builds one input pipeline: the source of its worker's batches (see
  // DistributeDatasetsFromFunction).
  using DatasetFn =
      std::function<StatusOr<DistributedDataset::BatchSource>(const InputContext& context)>;

  virtual ~Strategy() = default;
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  // This process's devices, one replica each.
  const std::vector<std::string>& devices() const { return devices_; }
  int num_local_replicas() const { return static_cast<int>(devices_.size()); }
  // Replicas of every worker that step together (devices() of each of num_workers() workers).
  int num_replicas_in_sync() const { return num_local_replicas() * num_workers_; }
  int num_workers() const { return num_workers_; }
  // This worker's task index in [0, num_workers()).
  int worker_index() const { return worker_index_; }
  // Shared by everything built with this strategy (not thread-safe; see cross_device_ops.h).
  // Code above this layer asks extended() instead.
  CrossDeviceOps& cross_device_ops() const { return *cross_device_ops_; }
  // The distribution policy (see strategy_extended.h).
  const StrategyExtended& extended() const { return *extended_; }

  // A variable of this strategy, placed and of the kind its policy decides (see
  // distributed_variable.h): MirroredStrategy makes one component per device,
  // CentralStorageStrategy one shared component (or one per device for kOnRead).
  StatusOr<std::shared_ptr<DistributedVariable>> CreateVariable(
      const weft::Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
      const Initializer& initializer,
      VariableSynchronization synchronization = VariableSynchronization::kAuto,
      VariableAggregation aggregation = VariableAggregation::kNone) const;
  // A variable made as inside Scope() (listed in variables()): colocated with `colocate_with`
  // when it is given (an optimizer's slot beside its variable), else as CreateVariable (kOnWrite,
  // NONE). Named `name` from the root name scope of `scope`.
  StatusOr<std::shared_ptr<DistributedVariable>> CreateVariableInScope(
      const weft::Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
      const Initializer& initializer, const DistributedVariable* colocate_with = nullptr) const;
  // The variable made by this strategy (CreateVariable, Scope()) that `component` is a component
  // of; null for a variable this strategy did not make.
  std::shared_ptr<DistributedVariable> FindVariable(const Variable& component) const;

  // See the file comment. Scopes may nest (also with other creators); destroy them in reverse
  // order on the thread that made them.
  StrategyScope Scope() const;
  // The DistributedVariables created through Scope(), in creation order.
  std::vector<std::shared_ptr<DistributedVariable>> variables() const;

  // Output i of every replica, grouped: result[i] is a PerReplica over devices(). The first error
  // of any replica (or of a merge function, or mismatched MergeCalls) fails the whole call.
  StatusOr<std::vector<PerReplica>> Run(const weft::Scope& scope, const ReplicaFn& fn) const;

  // The SUM or MEAN of `value`'s components (of every worker's replicas when there are several
  // workers), on devices()[0].
  StatusOr<Output> Reduce(const weft::Scope& scope, ReduceOp op, const PerReplica& value) const;

  // This worker's rows of a global batch (every worker reads the same batches): rows
  // [i * b / w, (i + 1) * b / w) for worker i of w; the batch itself with one worker. Shares the
  // batch's buffer. InvalidArgument naming `what` (e.g. "component 1 of a batch") for a scalar
  // or rows that do not divide by the workers.
  StatusOr<Tensor> WorkerShare(const Tensor& global_batch, std::string_view what = "a batch") const;
  // Slices of `batch` (with several workers: this worker's share of the global batch) along
  // dimension 0, one per local replica in order, each sharing the
  // batch's buffer. InvalidArgument for a scalar or a batch not divisible by the replica count.
  StatusOr<std::vector<Tensor>> SplitBatch(const Tensor& batch) const;
  // The per-replica view of a data::Dataset whose elements are batches (Dataset::Batch; one
  // tensor per component): with one worker each element is the global batch; with several, every
  // worker draws the same elements and takes its share of each (its rows: the global batch must
  // divide by num_workers()), as Model::Fit does. Then each share is split over the local
  // replicas. MakeIterator's error comes back here; a batch's, from DistributedDataset::Next.
  StatusOr<DistributedDataset> ExperimentalDistributeDataset(const data::Dataset& dataset) const;
  // The per-replica view of a source of batches (see distributed_dataset.h): each batch the source
  // gives is split over the local replicas as it is. With one worker that is the global batch;
  // with several, each worker's source must give its own share.
  DistributedDataset ExperimentalDistributeDataset(
      DistributedDataset::GlobalBatchSource source) const {
    return DistributedDataset(*this, std::move(source));
  }
  // For users who shard their own data (the reference's distribute_datasets_from_function): calls
  // `fn` once, now, with this worker's InputContext (num_workers() pipelines; this one's id is the
  // worker's task index, 0 with one worker), and returns the per-replica view of the source it
  // returns. That source gives this pipeline's batches: per-replica batch x num_local_replicas()
  // examples, each split over the local replicas. fn's error is returned with the pipeline named;
  // an empty source is an InvalidArgument.
  StatusOr<DistributedDataset> DistributeDatasetsFromFunction(const DatasetFn& fn) const;

  // How long Run waits for one replica to pause or finish before giving up (default 5 minutes).
  void set_run_timeout(std::chrono::milliseconds timeout) { run_timeout_ = timeout; }

 protected:
  // `worker_index` in [0, num_workers): this worker's task index, also its input pipeline's id.
  Strategy(std::vector<std::string> devices, std::unique_ptr<CrossDeviceOps> cross_device_ops,
           int num_workers = 1, int worker_index = 0)
      : devices_(std::move(devices)),
        cross_device_ops_(std::move(cross_device_ops)),
        num_workers_(num_workers),
        worker_index_(worker_index) {}
  // Each strategy's constructor installs its policy; `extended` may refer to the strategy.
  void set_extended(std::unique_ptr<StrategyExtended> extended) { extended_ = std::move(extended); }

  // Canonical names of `devices`; InvalidArgument for an empty list, a name that does not parse
  // or a duplicate (both spellings named).
  static StatusOr<std::vector<std::string>> CanonicalDevices(
      const std::vector<std::string>& devices);

 private:
  std::vector<std::string> devices_;
  std::unique_ptr<CrossDeviceOps> cross_device_ops_;
  std::unique_ptr<StrategyExtended> extended_;
  int num_workers_ = 1;
  int worker_index_ = 0;
  std::chrono::milliseconds run_timeout_{std::chrono::minutes(5)};

  friend class StrategyScope;
  // The variable creator Scope() installs.
  Variable CreateInScope(const weft::Scope& scope, std::string_view name, const TensorShape& shape,
                         DataType dtype, const Initializer& initializer,
                         const VariableOptions& options) const;
  // A DistributedVariable made through Scope(), recorded in variables(); errors go to `scope`.
  std::shared_ptr<DistributedVariable> CreateRecorded(const weft::Scope& scope,
                                                      std::string_view name,
                                                      const TensorShape& shape, DataType dtype,
                                                      const Initializer& initializer,
                                                      const VariableOptions& options) const;

  // What replica 0 created through Scope() in the current Run.
  struct ReplicaCreation {
    std::string name;  // as requested
    TensorShape shape;
    DataType dtype;
    std::shared_ptr<DistributedVariable> variable;
  };
  mutable Mutex mu_;
  mutable std::vector<std::shared_ptr<DistributedVariable>> scope_variables_ WEFT_GUARDED_BY(mu_);
  mutable std::vector<ReplicaCreation> run_created_ WEFT_GUARDED_BY(mu_);
  mutable std::vector<int64_t> run_next_ WEFT_GUARDED_BY(mu_);  // creations per replica r > 0
  // Every variable this strategy made, by the name of each of its components.
  mutable std::map<std::string, std::weak_ptr<DistributedVariable>> made_ WEFT_GUARDED_BY(mu_);

  // Records `variable` for FindVariable.
  void Remember(const std::shared_ptr<DistributedVariable>& variable) const;
};

// Installs a strategy's variable creator on this thread while it lives (see Strategy::Scope()).
class StrategyScope {
 public:
  explicit StrategyScope(const Strategy& strategy);
  StrategyScope(const StrategyScope&) = delete;
  StrategyScope& operator=(const StrategyScope&) = delete;

  const Strategy& strategy() const { return strategy_; }

 private:
  const Strategy& strategy_;
  VariableCreatorScope creator_scope_;
};

// One replica on one device; reductions are identities.
class OneDeviceStrategy final : public Strategy {
 public:
  static StatusOr<std::unique_ptr<OneDeviceStrategy>> Create(const std::string& device);

 private:
  OneDeviceStrategy(std::vector<std::string> devices,
                    std::unique_ptr<CrossDeviceOps> cross_device_ops);
};

// One replica per device, synchronous: variables mirrored, gradients all-reduced (by default with
// AllReduceCrossDeviceOps); the policy is MirroredExtended's.
class MirroredStrategy final : public Strategy {
 public:
  static StatusOr<std::unique_ptr<MirroredStrategy>> Create(
      const std::vector<std::string>& devices,
      std::unique_ptr<CrossDeviceOps> cross_device_ops = nullptr);

 private:
  MirroredStrategy(std::vector<std::string> devices,
                   std::unique_ptr<CrossDeviceOps> cross_device_ops);
};

}  // namespace weft::distribute
