#include "weft/train/optimizer.h"

#include "weft/distribute/replica_context.h"
#include "weft/distribute/strategy.h"
#include "weft/graph/gradients/gradients.h"

namespace weft::train {
namespace {

// Every ReadVariableOp of `variable` in the graph.
std::vector<Output> ReadsOf(const Variable& variable) {
  std::vector<Output> reads;
  for (const Edge* edge : variable.handle().node()->out_edges()) {
    if (!edge->IsControlEdge() && edge->dst->type_string() == "ReadVariableOp") {
      reads.push_back(Output(edge->dst, 0));
    }
  }
  return reads;
}

class GradientDescentOptimizer final : public Optimizer {
 public:
  explicit GradientDescentOptimizer(double learning_rate) : Optimizer(learning_rate) {}
  std::string name() const override { return "GradientDescent"; }

 protected:
  Output ApplyOne(const Scope& scope, const Variable& variable, const Output& gradient,
                  const Output& learning_rate) override {
    return ops::ResourceApplyGradientDescent(scope, variable.handle(), learning_rate, gradient);
  }
};

class MomentumOptimizer final : public Optimizer {
 public:
  MomentumOptimizer(double learning_rate, double momentum, bool use_nesterov)
      : Optimizer(learning_rate), momentum_(momentum), use_nesterov_(use_nesterov) {}
  std::string name() const override { return "Momentum"; }

 protected:
  Output ApplyOne(const Scope& scope, const Variable& variable, const Output& gradient,
                  const Output& learning_rate) override {
    Variable accumulator = CreateSlot(scope, variable, "Momentum");
    return ops::ResourceApplyMomentum(scope, variable.handle(), accumulator.handle(), learning_rate,
                                      gradient, momentum_, {.use_nesterov = use_nesterov_});
  }

 private:
  const double momentum_;
  const bool use_nesterov_;
};

class AdamOptimizer final : public Optimizer {
 public:
  AdamOptimizer(double learning_rate, double beta1, double beta2, double epsilon)
      : Optimizer(learning_rate), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {}
  std::string name() const override { return "Adam"; }

 protected:
  Output ApplyOne(const Scope& scope, const Variable& variable, const Output& gradient,
                  const Output& learning_rate) override {
    Variable m = CreateSlot(scope, variable, "Adam_m");
    Variable v = CreateSlot(scope, variable, "Adam_v");
    return ops::ResourceApplyAdam(scope, variable.handle(), m.handle(), v.handle(),
                                  beta1_power_.Read(scope), beta2_power_.Read(scope), learning_rate,
                                  beta1_, beta2_, epsilon_, gradient);
  }

  void CreateSharedSlots(const Scope& scope, DataType dtype) override {
    beta1_power_ = CreateScalar(scope, "beta1_power", dtype, beta1_);
    beta2_power_ = CreateScalar(scope, "beta2_power", dtype, beta2_);
  }

  // The powers advance once every update of the step has read them.
  std::vector<Output> Finish(const Scope& scope, const std::vector<Output>& updates) override {
    if (!beta1_power_) return {};
    Scope after = scope.WithControlDependencies(updates);
    return {beta1_power_.Assign(after, ops::Mul(after, beta1_power_.Read(after), beta1_)),
            beta2_power_.Assign(after, ops::Mul(after, beta2_power_.Read(after), beta2_))};
  }

 private:
  const double beta1_, beta2_, epsilon_;
  Variable beta1_power_, beta2_power_;
};

// The gradients with every non-empty one replaced by its MEAN over the replicas of `context`:
// one MergeCall whose merge function batch-reduces all of them onto every replica's device.
StatusOr<std::vector<GradientAndVariable>> AllReduceGradients(
    distribute::ReplicaContext& context, std::vector<GradientAndVariable> gradients) {
  if (context.num_replicas_in_sync() == 1) return gradients;
  std::vector<Output> values;
  for (const GradientAndVariable& pair : gradients) {
    if (pair.gradient) values.push_back(pair.gradient);
  }
  if (values.empty()) return gradients;
  const distribute::Strategy& strategy = context.strategy();
  auto merge_fn = [&strategy](const Scope& cross_replica_scope,
                              const std::vector<distribute::PerReplica>& grouped)
      -> StatusOr<std::vector<distribute::DistributedValues>> {
    WEFT_ASSIGN_OR_RETURN(std::vector<distribute::Mirrored> reduced,
                          strategy.cross_device_ops().BatchReduce(
                              cross_replica_scope.NewSubScope("gradients_all_reduce"),
                              distribute::ReduceOp::kMean, grouped, strategy.devices()));
    return std::vector<distribute::DistributedValues>(reduced.begin(), reduced.end());
  };
  WEFT_ASSIGN_OR_RETURN(std::vector<Output> reduced, context.MergeCall(values, merge_fn));
  if (reduced.size() != values.size()) {
    return Internal("ApplyGradients: all-reducing ", values.size(), " gradients gave ",
                    reduced.size());
  }
  size_t next = 0;
  for (GradientAndVariable& pair : gradients) {
    if (pair.gradient) pair.gradient = reduced[next++];
  }
  return gradients;
}

}  // namespace

StatusOr<std::vector<GradientAndVariable>> Optimizer::ComputeGradients(
    const Scope& scope, const Output& loss, const std::vector<Variable>& variables) const {
  std::vector<Output> xs;
  std::vector<size_t> owner;  // index of the variable each read belongs to
  for (size_t i = 0; i < variables.size(); ++i) {
    if (!variables[i]) return InvalidArgument("ComputeGradients: variable ", i, " is empty");
    for (const Output& read : ReadsOf(variables[i])) {
      xs.push_back(read);
      owner.push_back(i);
    }
  }
  std::vector<Output> grads;
  WEFT_RETURN_IF_ERROR(AddSymbolicGradients(scope, {loss}, xs, &grads));
  std::vector<std::vector<Output>> per_variable(variables.size());
  for (size_t i = 0; i < xs.size(); ++i) per_variable[owner[i]].push_back(grads[i]);
  std::vector<GradientAndVariable> result;
  Scope sum_scope = scope.NewSubScope("gradients_sum");
  for (size_t i = 0; i < variables.size(); ++i) {
    Output gradient;
    if (per_variable[i].size() == 1) gradient = per_variable[i][0];
    if (per_variable[i].size() > 1) gradient = ops::AddN(sum_scope, per_variable[i]);
    result.push_back({gradient, variables[i]});
  }
  WEFT_RETURN_IF_ERROR(scope.status());
  return result;
}

StatusOr<Output> Optimizer::ApplyGradients(const Scope& scope,
                                           const std::vector<GradientAndVariable>& unreduced,
                                           distribute::ReplicaContext* context) {
  WEFT_RETURN_IF_ERROR(scope.status());
  std::vector<GradientAndVariable> gradients = unreduced;
  if (context == nullptr) context = distribute::CurrentReplicaContext();
  if (context != nullptr) {
    // Every slot and update below is built after the MergeCall, in one turn of this replica.
    WEFT_ASSIGN_OR_RETURN(gradients, AllReduceGradients(*context, std::move(gradients)));
  }
  Scope optimizer_scope = scope.NewSubScope(name());
  Output learning_rate;
  for (const GradientAndVariable& pair : gradients) {
    if (pair.gradient) {
      Variable variable =
          CreateScalar(optimizer_scope, "learning_rate", pair.variable.dtype(), learning_rate_);
      if (variable) {
        learning_rate_variables_.push_back(variable);
        learning_rate = variable.Read(optimizer_scope);
      }
      CreateSharedSlots(optimizer_scope, pair.variable.dtype());
      break;
    }
  }
  std::vector<Output> updates;
  for (const GradientAndVariable& pair : gradients) {
    if (!pair.gradient) continue;
    Scope variable_scope = optimizer_scope.NewSubScope(pair.variable.name());
    if (!pair.variable.handle().node()->requested_device().empty()) {
      variable_scope = variable_scope.WithDevice(pair.variable.handle().node()->requested_device());
    }
    updates.push_back(ApplyOne(variable_scope, pair.variable, pair.gradient, learning_rate));
  }
  std::vector<Output> finish = Finish(optimizer_scope, updates);
  updates.insert(updates.end(), finish.begin(), finish.end());
  Output train_op =
      ops::NoOp(optimizer_scope.WithOpName("train_op").WithControlDependencies(updates));
  WEFT_RETURN_IF_ERROR(scope.status());
  return train_op;
}

StatusOr<Output> Optimizer::Minimize(const Scope& scope, const Output& loss,
                                     const std::vector<Variable>& variables,
                                     distribute::ReplicaContext* context) {
  WEFT_ASSIGN_OR_RETURN(std::vector<GradientAndVariable> gradients,
                        ComputeGradients(scope, loss, variables));
  return ApplyGradients(scope, gradients, context);
}

StatusOr<Output> Optimizer::AssignLearningRate(const Scope& scope, const Input& value) {
  WEFT_RETURN_IF_ERROR(scope.status());
  if (learning_rate_variables_.empty()) {
    return FailedPrecondition("optimizer ", name(),
                              ": no learning rate to assign before ApplyGradients");
  }
  std::vector<Output> assigns;
  for (const Variable& variable : learning_rate_variables_) {
    assigns.push_back(variable.Assign(scope, value));
  }
  Output assigned =
      ops::NoOp(scope.WithOpName("assign_learning_rate").WithControlDependencies(assigns));
  WEFT_RETURN_IF_ERROR(scope.status());
  return assigned;
}

void Optimizer::CreateSharedSlots(const Scope&, DataType) {}

std::vector<Output> Optimizer::Finish(const Scope&, const std::vector<Output>&) { return {}; }

Variable Optimizer::CreateSlot(const Scope& scope, const Variable& variable,
                               const std::string& slot) {
  // Named after the variable, from the root ("dense1/kernel/Momentum"), as in the reference: the
  // name a checkpoint stores it under, the same for every strategy and replica count.
  Variable created = Variable::Create(scope.WithRootNameScope().WithNoControlDependencies(),
                                      StrCat(LogicalName(variable), "/", slot), variable.shape(),
                                      variable.dtype(), Initializer::Zeros());
  Record(created);
  return created;
}

Variable Optimizer::CreateScalar(const Scope& scope, const std::string& name, DataType dtype,
                                 double value) {
  Variable created = Variable::Create(scope.WithRootNameScope().WithNoControlDependencies(), name,
                                      TensorShape(), dtype, Initializer::Constant(value));
  Record(created);
  return created;
}

void Optimizer::Record(const Variable& created) {
  if (!created) return;
  initializers_.push_back(created.initializer());
  variables_.push_back(created);
}

std::string Optimizer::LogicalName(const Variable& variable) {
  const distribute::ReplicaContext* context = distribute::CurrentReplicaContext();
  if (context == nullptr) return variable.name();
  const int r = context->replica_id();
  for (const auto& distributed : context->strategy().variables()) {
    if (r < distributed->num_components() && distributed->component(r).name() == variable.name()) {
      return distributed->name();
    }
  }
  return variable.name();
}

std::unique_ptr<Optimizer> NewGradientDescentOptimizer(double learning_rate) {
  return std::make_unique<GradientDescentOptimizer>(learning_rate);
}

std::unique_ptr<Optimizer> NewMomentumOptimizer(double learning_rate, double momentum,
                                                bool use_nesterov) {
  return std::make_unique<MomentumOptimizer>(learning_rate, momentum, use_nesterov);
}

std::unique_ptr<Optimizer> NewAdamOptimizer(double learning_rate, double beta1, double beta2,
                                            double epsilon) {
  return std::make_unique<AdamOptimizer>(learning_rate, beta1, beta2, epsilon);
}

}  // namespace weft::train
