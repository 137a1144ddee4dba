// Optimizer: builds a training step. ComputeGradients differentiates a loss with respect to
// variables (summing over every read of a variable that reaches the loss; a variable read only
// through embedding lookups gets a sparse gradient of the rows looked up); ApplyGradients adds one
// fused update kernel per variable (ResourceApply*, ResourceSparseApply* for sparse gradients), run
// in place on the variable's device, and returns a single op to run as the step's target. Minimize
// does both. Slot variables (momentum accumulators, Adam moments) are created on first use; run
// initializers() with the model's own variable initializers before the first step. Not thread-safe
// (it builds a graph).
//
// Inside distribute::Strategy::Run, pass the replica's ReplicaContext and that replica's
// variables (its components of the strategy's variables): ApplyGradients then makes one
// MergeCall in which the strategy's policy (Strategy::extended()) reduces the MEAN of every
// replica's gradients onto each variable's devices (one BatchReduceTo, so they travel packed) and
// places each update where the variable lives: under MirroredStrategy on every replica's own
// component, under CentralStorageStrategy once on the host. Identical inputs give identical
// updates, so the components of a mirrored variable stay bitwise equal. Slots and the learning
// rate are made through the strategy beside their variable (Strategy::CreateVariableInScope),
// named as without a strategy. One Optimizer may serve every replica of the run (its
// initializers() then cover all of them). Without an explicit context, ApplyGradients and
// Minimize use distribute::CurrentReplicaContext(), so the same calls work unchanged inside
// Strategy::Run.
//
// Every optimizer may also follow a learning-rate schedule (SetLearningRateSchedule) and clip its
// gradients by their global norm (SetGlobalClipNorm); both act inside the graph, so they work with
// every strategy and with steps unrolled by steps_per_execution.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/distribute/values.h"
#include "weft/graph/builder/ops.h"
#include "weft/graph/builder/variable.h"
#include "weft/train/learning_rate_schedule.h"

namespace weft::distribute {
class DistributedVariable;
class ReplicaContext;
class Strategy;
}  // namespace weft::distribute

namespace weft::train {

// The gradient of one variable. Dense: `gradient` has the variable's shape. Sparse (`indices`
// set, the reference's IndexedSlices): the variable was read only through ResourceGather (an
// embedding lookup), `indices` is a vector of row numbers and row i of `gradient` is the gradient
// of variable row indices[i] (repeats add up), so a step moves and updates the rows it touched.
struct GradientAndVariable {
  Output gradient;  // may be empty when the variable does not reach the loss
  Variable variable;
  Output indices;
};

// The dense gradient a sparse one stands for (UnsortedSegmentSum of its rows); a dense one as is.
Output DensifyGradient(const Scope& scope, const GradientAndVariable& gradient);

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  StatusOr<std::vector<GradientAndVariable>> ComputeGradients(
      const Scope& scope, const Output& loss, const std::vector<Variable>& variables) const;
  // The returned Output is a NoOp that runs every update (and any bookkeeping such as Adam's
  // beta powers) when run as a target. `context`: the replica's, inside Strategy::Run (see the
  // file comment); null means CurrentReplicaContext() (itself null outside Run).
  StatusOr<Output> ApplyGradients(const Scope& scope,
                                  const std::vector<GradientAndVariable>& gradients,
                                  distribute::ReplicaContext* context = nullptr);
  StatusOr<Output> Minimize(const Scope& scope, const Output& loss,
                            const std::vector<Variable>& variables,
                            distribute::ReplicaContext* context = nullptr);

  // The learning rate the optimizer was made with (under a schedule, the schedule's rate at step
  // 0). Without a schedule training reads it from a scalar variable "learning_rate" (one per
  // replica inside Strategy::Run, created by ApplyGradients), so that a callback can change it
  // between steps: run AssignLearningRate's op, which assigns `value` to every such variable
  // (FailedPrecondition before ApplyGradients, and under a schedule, which owns the rate).
  double learning_rate() const;
  StatusOr<Output> AssignLearningRate(const Scope& scope, const Input& value);

  // Follow `schedule` instead of a learning-rate variable: each update's rate is the schedule of
  // the optimizer's step counter, a scalar int64 variable "iterations" (the reference's
  // optimizer.iterations; one per replica inside Strategy::Run, made where "learning_rate" would
  // be and saved with the slots, so a resumed run continues the schedule) that counts the steps
  // applied: it advances once every update of a step has read it, and steps unrolled in one graph
  // see one value each. The rate is computed once per device and step, in float64, then cast to
  // the variables' dtype. InvalidArgument for null; FailedPrecondition after ApplyGradients.
  Status SetLearningRateSchedule(std::shared_ptr<const LearningRateSchedule> schedule);
  const LearningRateSchedule* schedule() const { return schedule_.get(); }

  // Scale every gradient by clip_norm / max(norm, clip_norm) before the updates (the reference's
  // global_clipnorm), `norm` being the global norm of all the gradients a step applies together
  // (gradient_clipping.h), so that a step equals one device's on the whole batch: with several
  // replicas in sync it is the norm of the reduced (MEAN) gradients, computed on each device from
  // the copies it holds (under MirroredStrategy and MultiWorkerMirroredStrategy every device holds
  // every gradient, so no extra reduction is needed and every replica computes bitwise the same
  // scale); with one replica in sync (one device, or each worker's own step under parameter
  // servers) it is that replica's gradients', clipped before they travel to the variables. A
  // sparse gradient kept sparse (one replica in sync) counts its rows as given, a repeated id once
  // per repeat, as the reference counts IndexedSlices. A non-finite norm makes every gradient NaN.
  // InvalidArgument naming clip_norm unless it is finite and positive; FailedPrecondition after
  // ApplyGradients.
  Status SetGlobalClipNorm(double clip_norm);
  std::optional<double> global_clip_norm() const { return global_clip_norm_; }

  // The initializers of the slot variables created so far.
  const std::vector<Output>& initializers() const { return initializers_; }
  // The slot variables created so far (inside Strategy::Run, the components this optimizer was
  // handed; the strategy's variables() lists the distributed ones). Slots are named after their
  // variable from the root name scope, as in the reference: "dense1/kernel/Momentum",
  // "beta1_power".
  const std::vector<Variable>& variables() const { return variables_; }
  virtual std::string name() const = 0;

 protected:
  explicit Optimizer(double learning_rate) : learning_rate_(learning_rate) {}

  // Adds the update of one variable; `scope` is named after the variable.
  virtual Output ApplyOne(const Scope& scope, const Variable& variable, const Output& gradient,
                          const Output& learning_rate) = 0;
  // The same for a sparse gradient (rows `values` of the rows `indices`; see GradientAndVariable).
  // By default the gradient is densified and applied with ApplyOne; optimizers with sparse
  // kernels (ResourceSparseApply*) update only the rows named.
  virtual Output ApplySparseOne(const Scope& scope, const Variable& variable, const Output& values,
                                const Output& indices, const Output& learning_rate);
  // Creates slots shared by all variables (Adam's beta powers), or under a strategy makes the
  // ones on `scope`'s device current: called before the updates and before Finish on each device.
  virtual void CreateSharedSlots(const Scope& scope, DataType dtype);
  // Ops run after every update of a step (Adam's beta powers); none by default.
  virtual std::vector<Output> Finish(const Scope& scope, const std::vector<Output>& updates);
  // A slot "<variable>/<slot>" of the variable's shape and dtype, zeros unless `initializer` says
  // otherwise (under a strategy: the component, on the update's device, of a slot made beside the
  // variable).
  Variable CreateSlot(const Scope& scope, const Variable& variable, const std::string& slot,
                      const Initializer& initializer = Initializer::Zeros());
  // A scalar non-trainable variable (Adam's beta powers), with its initializer recorded (under a
  // strategy: made once beside the learning rate; its component on the update's device).
  Variable CreateScalar(const Scope& scope, const std::string& name, DataType dtype, double value);
  // The name of `variable` as without a strategy ("dense1/kernel"; a replica's component of a
  // strategy's variable is named after the variable), for optimizers that treat variables by name.
  std::string VariableName(const Variable& variable) const;

 private:
  // Where slots go while an update under a strategy is being built.
  struct Placement {
    const distribute::Strategy* strategy;
    const distribute::DistributedVariable* variable;       // being updated
    const distribute::DistributedVariable* learning_rate;  // shared scalars sit beside it
    std::string device;                                    // canonical, of the update
  };
  // FailedPrecondition naming `what` once ApplyGradients has built a step.
  Status CheckNotApplied(std::string_view what) const;

  StatusOr<Output> ApplyInReplicaContext(const Scope& scope,
                                         const std::vector<GradientAndVariable>& gradients,
                                         distribute::ReplicaContext& context);
  // The merge function's work, in cross-replica context: reduce, update, one train op per replica.
  // `sparse_ids` holds, per gradient, the ids of a sparse one (its rows are `grouped`'s; one
  // replica in sync) or an empty Output. `order_tokens` (one per local replica, or none): ops each
  // update runs after (see TokensFor).
  StatusOr<std::vector<distribute::DistributedValues>> ApplyReduced(
      const Scope& cross_replica_scope, const distribute::Strategy& strategy,
      const std::vector<std::shared_ptr<distribute::DistributedVariable>>& targets,
      const std::vector<distribute::PerReplica>& grouped, const std::vector<Output>& sparse_ids,
      const std::vector<Output>& order_tokens);
  // The learning rate variable of the graph being built (under a schedule, the "iterations"
  // counter), made on first use beside `first` (the first variable updated; Adam's powers go beside
  // it too).
  StatusOr<std::shared_ptr<distribute::DistributedVariable>> LearningRateBeside(
      const Scope& scope, const distribute::Strategy& strategy,
      const distribute::DistributedVariable& first);
  // What an update on `device` waits for, of each replica's token of the previous step: the
  // token of the replica on that device, else (a variable on a device of its own, as a ps task's)
  // every token.
  static std::vector<Output> TokensFor(const distribute::Strategy& strategy,
                                       const std::vector<Output>& order_tokens,
                                       const std::string& device);
  // The gradients' MEAN over every replica, on each variable's devices (as they are with one
  // replica in sync).
  StatusOr<std::vector<distribute::Mirrored>> ReduceOntoVariables(
      const Scope& cross_replica_scope, const distribute::Strategy& strategy,
      const std::vector<std::shared_ptr<distribute::DistributedVariable>>& targets,
      const std::vector<distribute::PerReplica>& grouped);
  // The reduced gradients scaled to the global clip norm on each device that holds them (see
  // SetGlobalClipNorm).
  StatusOr<std::vector<distribute::Mirrored>> ClipReduced(
      const Scope& cross_replica_scope, const std::vector<distribute::Mirrored>& reduced) const;
  // The scheduled rate, in `dtype`, from the counter `iterations` read under `scope`.
  Output ScheduledRate(const Scope& scope, const Variable& iterations, DataType dtype) const;
  // Under a schedule: the op that advances `iterations` once `updates` have run, added to *ops.
  void AdvanceIterations(const Scope& scope, const Variable* iterations,
                         const std::vector<Output>& updates, std::vector<Output>* ops) const;
  // ApplyOne (ApplySparseOne with `sparse_ids`) for component `component` of `target`, with the
  // slots and the learning rate on its device.
  StatusOr<Output> UpdateComponent(const Scope& scope, const distribute::Strategy& strategy,
                                   const distribute::DistributedVariable& target, int component,
                                   const Output& gradient, const Output& sparse_ids,
                                   const distribute::DistributedVariable& learning_rate);
  // Each local replica's train op, from the op that finishes the updates on each device.
  // The op that ends this step's updates on each device (`devices` in order of first update,
  // `updates_on` theirs), after the bookkeeping Finish and the iteration count add there: once,
  // where the learning rate lives, when it has one component; else on every device.
  std::map<std::string, Output> FinishUpdates(
      const Scope& optimizer_scope, const distribute::Strategy& strategy,
      const distribute::DistributedVariable& first,
      const distribute::DistributedVariable& learning_rate, const std::vector<std::string>& devices,
      const std::map<std::string, std::vector<Output>>& updates_on);
  static distribute::PerReplica TrainOpsPerReplica(const Scope& optimizer_scope,
                                                   const distribute::Strategy& strategy,
                                                   const std::map<std::string, Output>& done_on);
  // The component on placement_'s device of the strategy variable `name`, made on first use
  // beside `colocate_with`; an empty Variable after an error (kept in placement_error_).
  Variable Placed(const Scope& scope, const std::string& name, const TensorShape& shape,
                  DataType dtype, const Initializer& initializer,
                  const distribute::DistributedVariable& colocate_with);
  void Record(const Variable& created);
  void RecordDistributed(const distribute::DistributedVariable& created);

  std::optional<Placement> placement_;
  // The slots and the learning rate made through a strategy, and the graph they belong to.
  std::map<std::string, std::shared_ptr<distribute::DistributedVariable>> placed_;
  std::shared_ptr<distribute::DistributedVariable> learning_rate_variable_;
  const Graph* placed_graph_ = nullptr;
  Status placement_error_;
  double learning_rate_;
  std::shared_ptr<const LearningRateSchedule> schedule_;
  std::optional<double> global_clip_norm_;
  bool applied_ = false;  // ApplyGradients has built a step
  // The rate of the step being built on each device (and dtype), read (or, under a schedule,
  // computed) once after that device's previous step.
  std::map<std::string, Output> rate_on_;
  std::vector<Variable> learning_rate_variables_;
  std::vector<Output> initializers_;
  std::vector<Variable> variables_;
};

std::unique_ptr<Optimizer> NewGradientDescentOptimizer(double learning_rate);
std::unique_ptr<Optimizer> NewMomentumOptimizer(double learning_rate, double momentum,
                                                bool use_nesterov = false);
std::unique_ptr<Optimizer> NewAdamOptimizer(double learning_rate, double beta1 = 0.9,
                                            double beta2 = 0.999, double epsilon = 1e-7);
// Adagrad (the reference's defaults): accum += grad^2; var -= lr * grad / (sqrt(accum) + epsilon),
// accum starting at `initial_accumulator_value`. Sparse gradients update only their rows.
std::unique_ptr<Optimizer> NewAdagradOptimizer(double learning_rate,
                                               double initial_accumulator_value = 0.1,
                                               double epsilon = 1e-7);

// Whether a variable's weights decay, from its name (as without a strategy: "dense1/kernel") and
// shape.
using WeightDecayFilter = std::function<bool(std::string_view name, const TensorShape& shape)>;
// The usual transformer recipe (W6: decay on rank >= 2): variables of rank >= `rank` decay
// (kernels, embedding tables), so biases and normalisation scales and offsets (rank 1) do not.
WeightDecayFilter DecayRankAtLeast(int rank);

struct AdamWOptions {
  // Variables whose name contains one of these do not decay (the reference's
  // exclude_from_weight_decay(var_names=...)), e.g. {"bias", "gamma", "beta"}.
  std::vector<std::string> exclude_from_weight_decay{};
  // When set, a variable not excluded by name decays only where it says so (DecayRankAtLeast(2)).
  WeightDecayFilter decay_if = nullptr;
};

// AdamW (Loshchilov & Hutter's decoupled weight decay, the reference's AdamW): Adam's moments, and
//   var -= lr * weight_decay * var + lr_t * m / (sqrt(v) + epsilon),
//   lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
// with var on the right the value before the step (the reference decays first, then applies
// Adam). One fused kernel per variable (ResourceApplyAdamW); variables that do not decay get
// ResourceApplyAdam, exactly Adam. `lr` is the learning rate or the schedule's rate. A sparse
// gradient is applied as the dense gradient it stands for (every row decays and moves, as in the
// reference), not lazily as NewAdamOptimizer does. InvalidArgument naming the argument for a
// negative or non-finite learning_rate or weight_decay, a beta outside [0, 1), a non-positive
// epsilon or an empty name in exclude_from_weight_decay.
StatusOr<std::unique_ptr<Optimizer>> NewAdamWOptimizer(double learning_rate, double weight_decay,
                                                       double beta1 = 0.9, double beta2 = 0.999,
                                                       double epsilon = 1e-7,
                                                       AdamWOptions options = {});

}  // namespace weft::train
