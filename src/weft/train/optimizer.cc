#include "weft/train/optimizer.h"

#include <map>
#include <unordered_set>

#include "weft/core/str_util.h"
#include "weft/distribute/packed_transfer.h"
#include "weft/distribute/replica_context.h"
#include "weft/distribute/strategy.h"
#include "weft/graph/gradients/gradients.h"
#include "weft/train/gradient_clipping.h"

namespace weft::train {
namespace {

// The component of `variable` on `device` (canonical), or null. A variable of one component
// serves every device (the learning rate of variables spread over several ps tasks): its reads
// cross to where it lives.
const Variable* ComponentOn(const distribute::DistributedVariable& variable,
                            const std::string& device) {
  if (variable.num_components() == 1) return &variable.component(0);
  for (int i = 0; i < variable.num_components(); ++i) {
    if (distribute::CanonicalDevice(variable.devices()[i]) == device) {
      return &variable.component(i);
    }
  }
  return nullptr;
}

// The reductions an update must wait for, by canonical device: every one of the step's on the
// update's device when the strategy asks for it (elastic training: a step whose collectives fail
// then changes no variable of this process), else none.
std::map<std::string, std::vector<Output>> ReductionsToAwait(
    const distribute::Strategy& strategy, const std::vector<distribute::Mirrored>& reduced) {
  std::map<std::string, std::vector<Output>> on_device;
  if (!strategy.extended().UpdatesAwaitEveryReduction()) return on_device;
  for (const distribute::Mirrored& value : reduced) {
    for (int r = 0; r < value.num_replicas(); ++r) {
      on_device[distribute::CanonicalDevice(value.device(r))].push_back(value.value(r));
    }
  }
  return on_device;
}

// Appends the outputs `by_device` holds for `device` (any spelling) to *outputs.
void AppendOnDevice(const std::map<std::string, std::vector<Output>>& by_device,
                    const std::string& device, std::vector<Output>* outputs) {
  auto it = by_device.find(distribute::CanonicalDevice(device));
  if (it != by_device.end()) outputs->insert(outputs->end(), it->second.begin(), it->second.end());
}

// Dense gradients bound for variables on another device (a ps task) travel there as one tensor
// per device and dtype rather than one each (distribute/packed_transfer.h).
StatusOr<std::vector<distribute::Mirrored>> MoveDenseGradientsTogether(
    const Scope& scope,
    const std::vector<std::shared_ptr<distribute::DistributedVariable>>& targets,
    std::vector<distribute::Mirrored> reduced, const std::vector<Output>& sparse_ids) {
  std::vector<size_t> which;
  std::vector<Output> values;
  std::vector<std::string> destinations;
  std::vector<TensorShape> shapes;
  for (size_t v = 0; v < targets.size(); ++v) {
    if (sparse_ids[v] || targets[v]->num_components() != 1 || reduced[v].num_replicas() != 1) {
      continue;
    }
    which.push_back(v);
    values.push_back(reduced[v].value(0));
    destinations.push_back(targets[v]->devices()[0]);
    shapes.push_back(targets[v]->shape());
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<Output> moved,
                        distribute::MoveTogether(scope.NewSubScope("gradients_to_variables"),
                                                 values, destinations, shapes));
  for (size_t i = 0; i < which.size(); ++i) {
    reduced[which[i]] = distribute::Mirrored({moved[i]}, {destinations[i]});
  }
  return reduced;
}

}  // namespace

StatusOr<Output> Optimizer::ApplyGradients(const Scope& scope,
                                           const std::vector<GradientAndVariable>& gradients,
                                           distribute::ReplicaContext* context) {
  WEFT_RETURN_IF_ERROR(scope.status());
  applied_ = true;
  if (context == nullptr) context = distribute::CurrentReplicaContext();
  if (context != nullptr) return ApplyInReplicaContext(scope, gradients, *context);
  Scope optimizer_scope = scope.NewSubScope(name());
  std::vector<GradientAndVariable> clipped = gradients;
  if (global_clip_norm_.has_value()) {
    std::vector<Output> values;
    for (const GradientAndVariable& pair : gradients) {
      if (pair.gradient) values.push_back(pair.gradient);
    }
    values = ClipByGlobalNorm(optimizer_scope, values, *global_clip_norm_);
    for (size_t g = 0, next = 0; g < clipped.size(); ++g) {
      if (clipped[g].gradient) clipped[g].gradient = values[next++];
    }
  }
  Output learning_rate;
  Variable iterations;  // under a schedule
  std::vector<Output> updates;
  for (const GradientAndVariable& pair : clipped) {
    if (!pair.gradient) continue;
    if (!learning_rate) {
      const DataType dtype = pair.variable.dtype();
      if (schedule_ != nullptr) {
        iterations = CreateScalar(optimizer_scope, "iterations", DataType::kInt64, 0);
        if (iterations) learning_rate = ScheduledRate(optimizer_scope, iterations, dtype);
      } else {
        Variable variable = CreateScalar(optimizer_scope, "learning_rate", dtype, learning_rate_);
        if (variable) {
          learning_rate_variables_.push_back(variable);
          learning_rate = variable.Read(optimizer_scope);
        }
      }
      CreateSharedSlots(optimizer_scope, dtype);
    }
    Scope variable_scope = optimizer_scope.NewSubScope(pair.variable.name());
    if (!pair.variable.handle().node()->requested_device().empty()) {
      variable_scope = variable_scope.WithDevice(pair.variable.handle().node()->requested_device());
    }
    updates.push_back(pair.indices
                          ? ApplySparseOne(variable_scope, pair.variable, pair.gradient,
                                           pair.indices, learning_rate)
                          : ApplyOne(variable_scope, pair.variable, pair.gradient, learning_rate));
  }
  std::vector<Output> finish = Finish(optimizer_scope, updates);
  AdvanceIterations(optimizer_scope, &iterations, updates, &finish);
  updates.insert(updates.end(), finish.begin(), finish.end());
  Output train_op =
      ops::NoOp(optimizer_scope.WithOpName("train_op").WithControlDependencies(updates));
  WEFT_RETURN_IF_ERROR(scope.status());
  return train_op;
}

StatusOr<Output> Optimizer::ApplyInReplicaContext(const Scope& scope,
                                                  const std::vector<GradientAndVariable>& gradients,
                                                  distribute::ReplicaContext& context) {
  // As the reference's optimizer: one MergeCall, in which the strategy's policy reduces every
  // gradient onto its variable's devices (one batch, so they travel packed) and places each
  // update where the variable lives; every replica then continues with its own train op.
  const distribute::Strategy& strategy = context.strategy();
  // With one replica in sync (one device, or each worker's step under parameter servers) nothing
  // is reduced, and a sparse gradient reaches its variable's device as its rows and ids. With
  // several, replicas' rows are reduced as the dense gradient they stand for: each replica looks
  // up different rows, and the all-reduce needs one shape on every replica.
  const bool keep_sparse = strategy.num_replicas_in_sync() == 1;
  std::vector<Output> values;
  std::vector<Variable> variables;
  std::vector<Output> indices;  // per gradient; empty when dense
  for (const GradientAndVariable& pair : gradients) {
    if (!pair.gradient) continue;
    const bool sparse = pair.indices && keep_sparse;
    values.push_back(pair.indices && !sparse ? DensifyGradient(scope, pair) : pair.gradient);
    indices.push_back(sparse ? pair.indices : Output());
    variables.push_back(pair.variable);
  }
  if (values.empty()) return ops::NoOp(scope.NewSubScope(name()).WithOpName("train_op"));
  // The ids travel through the merge after the gradients, in the same order.
  const size_t num_gradients = values.size();
  for (const Output& ids : indices) {
    if (ids) values.push_back(ids);
  }
  // A replica scope that runs after other ops (the previous step, in steps unrolled one after
  // another) passes that order on to the updates built in the merge, whose cross-replica scope
  // does not have it: without it, an update's reads of shared state (Adam's powers) could run
  // before the previous step's update wrote it. A token made under the replica's scope carries it.
  const bool ordered = !scope.control_dependencies().empty();
  if (ordered) values.push_back(ops::Const(scope.WithOpName("after_previous_step"), 0.0f));
  auto merge_fn = [this, &strategy, &variables, &indices, num_gradients, ordered](
                      const Scope& cross_replica_scope,
                      const std::vector<distribute::PerReplica>& all)
      -> StatusOr<std::vector<distribute::DistributedValues>> {
    std::vector<distribute::PerReplica> grouped(all.begin(), all.begin() + num_gradients);
    std::vector<Output> sparse_ids(num_gradients);
    for (size_t v = 0, next = num_gradients; v < num_gradients; ++v) {
      if (indices[v]) sparse_ids[v] = all[next++].values()[0];
    }
    std::vector<std::shared_ptr<distribute::DistributedVariable>> targets;
    for (const Variable& variable : variables) {
      std::shared_ptr<distribute::DistributedVariable> target = strategy.FindVariable(variable);
      if (target == nullptr) {
        return InvalidArgument("ApplyGradients: variable '", variable.name(),
                               "' was not made by the strategy; create it inside "
                               "Strategy::Scope() or with Strategy::CreateVariable");
      }
      targets.push_back(std::move(target));
    }
    return ApplyReduced(cross_replica_scope, strategy, targets, grouped, sparse_ids,
                        ordered ? all.back().values() : std::vector<Output>{});
  };
  WEFT_ASSIGN_OR_RETURN(std::vector<Output> mine, context.MergeCall(values, merge_fn));
  if (mine.size() != 1) {
    return Internal("ApplyGradients: the merge gave ", mine.size(), " train ops for a replica");
  }
  return mine[0];
}

StatusOr<std::vector<distribute::DistributedValues>> Optimizer::ApplyReduced(
    const Scope& cross_replica_scope, const distribute::Strategy& strategy,
    const std::vector<std::shared_ptr<distribute::DistributedVariable>>& targets,
    const std::vector<distribute::PerReplica>& grouped, const std::vector<Output>& sparse_ids,
    const std::vector<Output>& order_tokens) {
  // Slots and the learning rate are made once per graph and shared by every update built in it
  // (Fit's steps_per_execution unrolls several steps; a second loss may train the same variables).
  if (placed_graph_ != cross_replica_scope.graph()) {
    placed_.clear();
    learning_rate_variable_.reset();
    placed_graph_ = cross_replica_scope.graph();
  }
  placement_error_ = Status::OK();
  // A rate serves the updates of this step only: the next step reads its own (and its own count).
  rate_on_.clear();
  WEFT_ASSIGN_OR_RETURN(std::vector<distribute::Mirrored> reduced,
                        ReduceOntoVariables(cross_replica_scope, strategy, targets, grouped));
  if (global_clip_norm_.has_value()) {
    WEFT_ASSIGN_OR_RETURN(reduced, ClipReduced(cross_replica_scope, reduced));
  }
  WEFT_ASSIGN_OR_RETURN(reduced, MoveDenseGradientsTogether(cross_replica_scope, targets,
                                                            std::move(reduced), sparse_ids));
  Scope optimizer_scope = cross_replica_scope.NewSubScope(name());
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<distribute::DistributedVariable> learning_rate,
                        LearningRateBeside(optimizer_scope, strategy, *targets[0]));
  const std::map<std::string, std::vector<Output>> reduced_on =
      ReductionsToAwait(strategy, reduced);
  // Updates grouped by device, in order of first appearance, for Finish.
  std::vector<std::string> devices;
  std::map<std::string, std::vector<Output>> updates_on;
  for (size_t v = 0; v < targets.size(); ++v) {
    const distribute::DistributedVariable& target = *targets[v];
    WEFT_ASSIGN_OR_RETURN(
        std::vector<Output> updates,
        strategy.extended().Update(
            optimizer_scope.NewSubScope(target.name()), target, {reduced[v]},
            [&](const Scope& scope, int component,
                const std::vector<Output>& args) -> StatusOr<Output> {
              const std::string& device = target.devices()[component];
              std::vector<Output> after = TokensFor(strategy, order_tokens, device);
              AppendOnDevice(reduced_on, device, &after);
              return UpdateComponent(after.empty() ? scope : scope.WithControlDependencies(after),
                                     strategy, target, component, args[0], sparse_ids[v],
                                     *learning_rate);
            }));
    for (int i = 0; i < target.num_components(); ++i) {
      const std::string device = distribute::CanonicalDevice(target.devices()[i]);
      if (!updates_on.contains(device)) devices.push_back(device);
      updates_on[device].push_back(updates[i]);
    }
  }
  WEFT_RETURN_IF_ERROR(placement_error_);
  const std::map<std::string, Output> done_on =
      FinishUpdates(optimizer_scope, strategy, *targets[0], *learning_rate, devices, updates_on);
  WEFT_RETURN_IF_ERROR(placement_error_);
  WEFT_RETURN_IF_ERROR(cross_replica_scope.status());
  return std::vector<distribute::DistributedValues>{
      TrainOpsPerReplica(optimizer_scope, strategy, done_on)};
}

std::map<std::string, Output> Optimizer::FinishUpdates(
    const Scope& optimizer_scope, const distribute::Strategy& strategy,
    const distribute::DistributedVariable& first,
    const distribute::DistributedVariable& learning_rate, const std::vector<std::string>& devices,
    const std::map<std::string, std::vector<Output>>& updates_on) {
  std::map<std::string, Output> done_on;
  if (learning_rate.num_components() == 1) {
    // One copy of the shared slots (the learning rate, Adam's powers) serves variables on every
    // device: the bookkeeping runs once, where they live, after every update. Another device's
    // updates reach it through one op there: each control edge that crosses tasks is a transfer
    // of its own every step (W7's 26 tables on a second ps task were 35).
    const std::string home = distribute::CanonicalDevice(learning_rate.devices()[0]);
    std::vector<Output> all;
    for (const std::string& device : devices) {
      const std::vector<Output>& updates = updates_on.at(device);
      if (device == home || updates.size() == 1) {
        all.insert(all.end(), updates.begin(), updates.end());
      } else {
        all.push_back(ops::NoOp(optimizer_scope.WithDevice(device)
                                    .WithOpName("updates_done")
                                    .WithControlDependencies(updates)));
      }
    }
    Scope on_home = optimizer_scope.WithDevice(home);
    placement_ = Placement{&strategy, &first, &learning_rate, home};
    CreateSharedSlots(on_home, first.dtype());
    std::vector<Output> finish = Finish(on_home, all);
    placement_.reset();
    AdvanceIterations(on_home, &learning_rate.component(0), all, &finish);
    all.insert(all.end(), finish.begin(), finish.end());
    done_on[home] = ops::NoOp(on_home.WithOpName("update").WithControlDependencies(all));
    return done_on;
  }
  // Otherwise one op per device that runs its updates and then Finish's bookkeeping there.
  for (const std::string& device : devices) {
    Scope on_device = optimizer_scope.WithDevice(device);
    placement_ = Placement{&strategy, &first, &learning_rate, device};
    CreateSharedSlots(on_device, first.dtype());
    std::vector<Output> updates = updates_on.at(device);
    std::vector<Output> finish = Finish(on_device, updates);
    placement_.reset();
    AdvanceIterations(on_device, ComponentOn(learning_rate, device), updates, &finish);
    updates.insert(updates.end(), finish.begin(), finish.end());
    done_on[device] = ops::NoOp(on_device.WithOpName("update").WithControlDependencies(updates));
  }
  return done_on;
}

StatusOr<std::shared_ptr<distribute::DistributedVariable>> Optimizer::LearningRateBeside(
    const Scope& scope, const distribute::Strategy& strategy,
    const distribute::DistributedVariable& first) {
  if (learning_rate_variable_ == nullptr && schedule_ != nullptr) {
    WEFT_ASSIGN_OR_RETURN(learning_rate_variable_,
                          strategy.CreateVariableInScope(
                              scope.WithNoControlDependencies(), "iterations", TensorShape(),
                              DataType::kInt64, Initializer::Zeros(), &first));
    RecordDistributed(*learning_rate_variable_);
  } else if (learning_rate_variable_ == nullptr) {
    WEFT_ASSIGN_OR_RETURN(learning_rate_variable_,
                          strategy.CreateVariableInScope(
                              scope.WithNoControlDependencies(), "learning_rate", TensorShape(),
                              first.dtype(), Initializer::Constant(learning_rate_), &first));
    RecordDistributed(*learning_rate_variable_);
    for (const Variable& component : learning_rate_variable_->components()) {
      learning_rate_variables_.push_back(component);
    }
  }
  return learning_rate_variable_;
}

std::vector<Output> Optimizer::TokensFor(const distribute::Strategy& strategy,
                                         const std::vector<Output>& order_tokens,
                                         const std::string& device) {
  const std::string canonical = distribute::CanonicalDevice(device);
  for (size_t r = 0; r < order_tokens.size() && r < strategy.devices().size(); ++r) {
    if (distribute::CanonicalDevice(strategy.devices()[r]) == canonical) return {order_tokens[r]};
  }
  return order_tokens;
}

StatusOr<std::vector<distribute::Mirrored>> Optimizer::ReduceOntoVariables(
    const Scope& cross_replica_scope, const distribute::Strategy& strategy,
    const std::vector<std::shared_ptr<distribute::DistributedVariable>>& targets,
    const std::vector<distribute::PerReplica>& grouped) {
  if (strategy.num_replicas_in_sync() == 1) {
    std::vector<distribute::Mirrored> as_they_are;
    for (const distribute::PerReplica& value : grouped) {
      as_they_are.emplace_back(value.values(), value.devices());
    }
    return as_they_are;
  }
  std::vector<std::vector<std::string>> destinations;
  for (const auto& target : targets) destinations.push_back(target->devices());
  return strategy.extended().BatchReduceTo(cross_replica_scope.NewSubScope("gradients_all_reduce"),
                                           distribute::ReduceOp::kMean, grouped, destinations);
}

StatusOr<Output> Optimizer::UpdateComponent(const Scope& scope,
                                            const distribute::Strategy& strategy,
                                            const distribute::DistributedVariable& target,
                                            int component, const Output& gradient,
                                            const Output& sparse_ids,
                                            const distribute::DistributedVariable& learning_rate) {
  const std::string device = distribute::CanonicalDevice(target.devices()[component]);
  const Variable* rate = ComponentOn(learning_rate, device);
  if (rate == nullptr) {
    return InvalidArgument("ApplyGradients: no learning rate on ", device, " for variable '",
                           target.name(), "'");
  }
  // Read once per device and step, under the first update's scope: it runs after that device's
  // previous step like every update there. A rate on another task crosses once, not once per
  // update (W7's second ps task read the first's 31 times a step).
  const std::string key = StrCat(device, " ", DataTypeName(target.dtype()));
  auto [cached, made] = rate_on_.try_emplace(key);
  if (made) {
    cached->second =
        schedule_ != nullptr ? ScheduledRate(scope, *rate, target.dtype()) : rate->Read(scope);
  }
  const Output rate_value = cached->second;
  placement_ = Placement{&strategy, &target, &learning_rate, device};
  CreateSharedSlots(scope, target.dtype());
  Output update = sparse_ids ? ApplySparseOne(scope, target.component(component), gradient,
                                              sparse_ids, rate_value)
                             : ApplyOne(scope, target.component(component), gradient, rate_value);
  placement_.reset();
  return update;
}

distribute::PerReplica Optimizer::TrainOpsPerReplica(const Scope& optimizer_scope,
                                                     const distribute::Strategy& strategy,
                                                     const std::map<std::string, Output>& done_on) {
  // Replica r's train op runs the updates on its device, or all of them when none is there (the
  // variables live elsewhere).
  std::vector<Output> train_ops;
  for (const std::string& replica_device : strategy.devices()) {
    auto here = done_on.find(distribute::CanonicalDevice(replica_device));
    std::vector<Output> mine;
    if (here != done_on.end()) {
      mine.push_back(here->second);
    } else {
      for (const auto& [unused, op] : done_on) mine.push_back(op);
    }
    train_ops.push_back(ops::NoOp(optimizer_scope.WithDevice(replica_device)
                                      .WithOpName("train_op")
                                      .WithControlDependencies(mine)));
  }
  return distribute::PerReplica(std::move(train_ops), strategy.devices());
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
  if (schedule_ != nullptr) {
    return FailedPrecondition("optimizer ", name(), " follows a learning-rate schedule (",
                              schedule_->DebugString(), "); its learning rate cannot be assigned");
  }
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

Output Optimizer::ApplySparseOne(const Scope& scope, const Variable& variable, const Output& values,
                                 const Output& indices, const Output& learning_rate) {
  return ApplyOne(scope, variable, DensifyGradient(scope, {values, variable, indices}),
                  learning_rate);
}

Output DensifyGradient(const Scope& scope, const GradientAndVariable& gradient) {
  if (!gradient.indices) return gradient.gradient;
  const TensorShape& shape = gradient.variable.shape();
  const int64_t rows = shape.dims() == 0 ? 1 : shape.dim_size(0);
  return ops::UnsortedSegmentSum(scope.NewSubScope("densify"), gradient.gradient, gradient.indices,
                                 ops::Const(scope, rows));
}

void Optimizer::CreateSharedSlots(const Scope&, DataType) {}

std::vector<Output> Optimizer::Finish(const Scope&, const std::vector<Output>&) { return {}; }

Variable Optimizer::CreateSlot(const Scope& scope, const Variable& variable,
                               const std::string& slot, const Initializer& initializer) {
  if (placement_.has_value()) {
    return Placed(scope, StrCat(placement_->variable->name(), "/", slot), variable.shape(),
                  variable.dtype(), initializer, *placement_->variable);
  }
  // Named after the variable, from the root ("dense1/kernel/Momentum"), as in the reference: the
  // name a checkpoint stores it under, the same for every strategy and replica count.
  Variable created = Variable::Create(scope.WithRootNameScope().WithNoControlDependencies(),
                                      StrCat(variable.name(), "/", slot), variable.shape(),
                                      variable.dtype(), initializer);
  Record(created);
  return created;
}

Variable Optimizer::CreateScalar(const Scope& scope, const std::string& name, DataType dtype,
                                 double value) {
  if (placement_.has_value()) {
    return Placed(scope, name, TensorShape(), dtype, Initializer::Constant(value),
                  *placement_->learning_rate);
  }
  Variable created = Variable::Create(scope.WithRootNameScope().WithNoControlDependencies(), name,
                                      TensorShape(), dtype, Initializer::Constant(value));
  Record(created);
  return created;
}

Variable Optimizer::Placed(const Scope& scope, const std::string& name, const TensorShape& shape,
                           DataType dtype, const Initializer& initializer,
                           const distribute::DistributedVariable& colocate_with) {
  auto it = placed_.find(name);
  if (it == placed_.end()) {
    StatusOr<std::shared_ptr<distribute::DistributedVariable>> made =
        placement_->strategy->CreateVariableInScope(scope.WithNoControlDependencies(), name, shape,
                                                    dtype, initializer, &colocate_with);
    if (!made.ok()) {
      if (placement_error_.ok()) placement_error_ = made.status();
      return Variable();
    }
    RecordDistributed(**made);
    it = placed_.emplace(name, std::move(made).value()).first;
  }
  const Variable* component = ComponentOn(*it->second, placement_->device);
  if (component == nullptr) {
    if (placement_error_.ok()) {
      placement_error_ = InvalidArgument("optimizer ", this->name(), ": slot '", name,
                                         "' has no component on ", placement_->device);
    }
    return Variable();
  }
  return *component;
}

void Optimizer::Record(const Variable& created) {
  if (!created) return;
  initializers_.push_back(created.initializer());
  variables_.push_back(created);
}

void Optimizer::RecordDistributed(const distribute::DistributedVariable& created) {
  initializers_.push_back(created.initializer());
  variables_.insert(variables_.end(), created.components().begin(), created.components().end());
}

}  // namespace weft::train
