// StrategyExtended: the distribution policy behind a Strategy (the reference's
// tf.distribute.StrategyExtended). Everything that differs between strategies is asked here, so
// that the optimizer, the model and the train loop need not know which strategy they run under:
// where a variable lives and what kind it is (CreateVariable, CreateColocatedVariable: the
// reference's colocate_vars_with), how the replicas' values reach the variables' devices
// (BatchReduceTo: reduce_to / batch_reduce_to), where an update runs (Update), and what a session,
// the first step and a checkpoint need (ConfigureSession, SynchronizeInitialValues,
// ShouldCheckpoint). Splitting a global batch is the same for every strategy and lives in Strategy.
//
// Each strategy owns one final implementation; Strategy::extended() returns it. Like graph
// building, not thread-safe: Strategy::Run's replicas take turns.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/distribute/cross_device_ops.h"
#include "weft/distribute/distributed_variable.h"
#include "weft/distribute/reduce_op.h"
#include "weft/distribute/values.h"
#include "weft/runtime/session.h"

namespace weft::distribute {

class StrategyExtended {
 public:
  // Builds the update of one component of a variable: `component` is its index in
  // variable.components(), `scope` is placed on that component's device and `args` holds, in
  // order, the value of each of Update's `args` on that device.
  using UpdateFn = std::function<StatusOr<Output>(const Scope& scope, int component,
                                                  const std::vector<Output>& args)>;

  virtual ~StrategyExtended() = default;

  // A variable of this strategy: where its components live and which kind of DistributedVariable
  // it is follow from `synchronization` (see each strategy's header).
  virtual StatusOr<std::shared_ptr<DistributedVariable>> CreateVariable(
      const Scope& scope, std::string_view name, const TensorShape& shape, DataType dtype,
      const Initializer& initializer, VariableSynchronization synchronization,
      VariableAggregation aggregation) const = 0;
  // A variable that lives where `primary` lives, one component per component of `primary` and of
  // its kind (an optimizer's slot, updated beside its variable).
  virtual StatusOr<std::shared_ptr<DistributedVariable>> CreateColocatedVariable(
      const Scope& scope, const DistributedVariable& primary, std::string_view name,
      const TensorShape& shape, DataType dtype, const Initializer& initializer) const = 0;

  // values[i] of every replica (of every worker) combined with `op` and placed on each device of
  // destinations[i] (typically a variable's devices()). One call for all values, so that an
  // implementation may pack them.
  virtual StatusOr<std::vector<Mirrored>> BatchReduceTo(
      const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
      const std::vector<std::vector<std::string>>& destinations) const = 0;

  // Calls `fn` once for each component of `variable` that this process holds, on its device,
  // with the value of each of `args` on that device; returns the updates, one per call.
  // InvalidArgument naming the variable when an argument has no value on a component's device.
  virtual StatusOr<std::vector<Output>> Update(const Scope& scope,
                                               const DistributedVariable& variable,
                                               const std::vector<Mirrored>& args,
                                               const UpdateFn& fn) const = 0;

  // Adds what a session running this strategy's graph needs (devices, collectives, threads).
  virtual void ConfigureSession(SessionOptions* options) const = 0;
  // An op to run once after the initializers so that every replica of every worker starts from
  // the same values; an empty Output when the initializers already guarantee it.
  virtual StatusOr<Output> SynchronizeInitialValues(
      const Scope& scope,
      const std::vector<std::shared_ptr<DistributedVariable>>& variables) const = 0;
  // Whether this process writes checkpoints (every process restores).
  virtual bool ShouldCheckpoint() const = 0;
  // The transports that carry collectives between processes, for reports; empty for none.
  virtual std::vector<std::string> CollectiveTransportNames() const { return {}; }
  // With several workers stepping together (MultiWorkerMirroredStrategy): wall time this process
  // spent in collectives across processes so far (waiting for peers included), and `values` of
  // every worker by index, gathered by one small collective (every worker calls it at the same
  // point). Unimplemented otherwise.
  virtual int64_t CrossWorkerCommunicationNanos() const { return 0; }
  virtual StatusOr<std::vector<std::vector<double>>> AllGatherFromWorkers(
      const std::vector<double>& /*values*/) const {
    return Unimplemented("this strategy has no synchronous workers to gather values from");
  }
  // Elastic training (a worker of the group was lost): fails the collectives across processes that
  // are pending or start later with `status`, so that a step blocked on the lost worker ends at
  // once. Nothing to do without such collectives.
  virtual void AbortCollectives(const Status& /*status*/) const {}
  // Whether every update of a step waits until all of the step's reductions have arrived on its
  // device, so that a step whose collectives fail changes no variable (elastic training runs it
  // again from the last completed step). False: each variable updates as soon as its own
  // reduction arrives (updates overlap the later buckets' communication).
  virtual bool UpdatesAwaitEveryReduction() const { return false; }
  // Where training steps run. Empty (the default): in the model's own session, every replica in
  // every step. Otherwise one session per worker of an asynchronous strategy (parameter-server
  // training): `configured`, what ConfigureSession made (the model's own session), is worker 0's
  // and the result holds every worker's, in order; each step runs in one of them, dispatched by a
  // ClusterCoordinator to a free worker.
  virtual std::vector<SessionOptions> WorkerSessionOptions(
      const SessionOptions& /*configured*/) const {
    return {};
  }
  // Into how many shards a layer that can use them (an Embedding's table) cuts a weight of `shape`
  // and `dtype` along its first dimension, each made through the strategy's variable creator (the
  // reference's variable_partitioner): 1, whole, but under ParameterServerStrategy.
  virtual int64_t NumShards(const TensorShape& /*shape*/, DataType /*dtype*/) const { return 1; }
  // When the strategy chains its collectives in one order (across tasks): starts a new chain for
  // collectives built for a graph run in steps of its own (a model's second training graph, of
  // several steps per run), so that running it does not pull in the first; returns the old chain,
  // which SetCollectiveOrdering puts back. Nothing to do otherwise.
  virtual std::vector<Output> TakeCollectiveOrdering() const { return {}; }
  virtual void SetCollectiveOrdering(std::vector<Output> /*chain*/) const {}
};

// The update of a variable component by component, on each component's own device (the policy
// of every strategy whose variables this process holds entirely): `fn` for component i gets the
// value of each argument on devices()[i].
StatusOr<std::vector<Output>> UpdateEachComponent(const Scope& scope,
                                                  const DistributedVariable& variable,
                                                  const std::vector<Mirrored>& args,
                                                  const StrategyExtended::UpdateFn& fn);

// BatchReduceTo through `cross_device_ops`: one BatchReduce per distinct list of destinations
// (all of them at once when every value goes to the same devices).
StatusOr<std::vector<Mirrored>> BatchReduceByDestination(
    CrossDeviceOps& cross_device_ops, const Scope& scope, ReduceOp op,
    const std::vector<PerReplica>& values,
    const std::vector<std::vector<std::string>>& destinations);

}  // namespace weft::distribute
