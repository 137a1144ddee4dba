// Optimizer: builds a training step. ComputeGradients differentiates a loss with respect to
// variables (summing over every read of a variable that reaches the loss); ApplyGradients adds one
// fused update kernel per variable (ResourceApply*), run in place on the variable's device, and
// returns a single op to run as the step's target. Minimize does both. Slot variables (momentum
// accumulators, Adam moments) are created on first use; run initializers() with the model's own
// variable initializers before the first step. Not thread-safe (it builds a graph).
//
// Inside distribute::Strategy::Run, pass the replica's ReplicaContext and that replica's
// variables (its components of the distributed variables): ApplyGradients then first all-reduces
// the gradients of every replica (MEAN, one MergeCall, one BatchReduce through the strategy's
// CrossDeviceOps, so they travel packed in buckets), and each replica applies the reduced
// gradients to its own components, on their devices, with slots of its own. Identical inputs
// give identical updates, so the components of a mirrored variable stay bitwise equal. One
// Optimizer may serve every replica of the run (its initializers() then cover all of them).
// Without an explicit context, ApplyGradients and Minimize use distribute::CurrentReplicaContext(),
// so the same calls work unchanged inside Strategy::Run. Inside Strategy::Scope(), slot variables
// are created through it too (mirrored, one component per replica, matched by creation order).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/graph/builder/ops.h"
#include "weft/graph/builder/variable.h"

namespace weft::distribute {
class ReplicaContext;
}  // namespace weft::distribute

namespace weft::train {

struct GradientAndVariable {
  Output gradient;  // may be empty when the variable does not reach the loss
  Variable variable;
};

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

  // The learning rate the optimizer was made with. Training reads it from a scalar variable
  // "learning_rate" (one per replica inside Strategy::Run, created by ApplyGradients), so that a
  // schedule can change it between steps: run AssignLearningRate's op, which assigns `value` to
  // every such variable (FailedPrecondition before ApplyGradients).
  double learning_rate() const { return learning_rate_; }
  StatusOr<Output> AssignLearningRate(const Scope& scope, const Input& value);

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
  // Creates slots shared by all variables (Adam's beta powers) once per ApplyGradients.
  virtual void CreateSharedSlots(const Scope& scope, DataType dtype);
  // Ops run after every update of a step (Adam's beta powers); none by default.
  virtual std::vector<Output> Finish(const Scope& scope, const std::vector<Output>& updates);
  // A zero-initialised slot "<variable>/<slot>" of the variable's shape and dtype.
  Variable CreateSlot(const Scope& scope, const Variable& variable, const std::string& slot);
  // A scalar non-trainable variable (Adam's beta powers), with its initializer recorded.
  Variable CreateScalar(const Scope& scope, const std::string& name, DataType dtype, double value);

 private:
  void Record(const Variable& created);
  // `variable`'s name, or inside Strategy::Run the name of the distributed variable it is a
  // component of (so every replica asks for a slot of the same name).
  static std::string LogicalName(const Variable& variable);

  double learning_rate_;
  std::vector<Variable> learning_rate_variables_;
  std::vector<Output> initializers_;
  std::vector<Variable> variables_;
};

std::unique_ptr<Optimizer> NewGradientDescentOptimizer(double learning_rate);
std::unique_ptr<Optimizer> NewMomentumOptimizer(double learning_rate, double momentum,
                                                bool use_nesterov = false);
std::unique_ptr<Optimizer> NewAdamOptimizer(double learning_rate, double beta1 = 0.9,
                                            double beta2 = 0.999, double epsilon = 1e-7);

}  // namespace weft::train
