#include "weft/train/model.h"

#include <algorithm>

#include "weft/core/logging.h"
#include "weft/core/str_util.h"
#include "weft/framework/device_name_utils.h"
#include "weft/runtime/device_factory.h"
#include "weft/train/model_graph.h"
#include "weft/train/model_graph_builder.h"
#include "weft/train/random_seed.h"

namespace weft::train {
namespace {

// The devices of each type a local session needs for `devices`: one more than the highest id
// named of each type. The type must be one `factories` makes.
StatusOr<std::map<std::string, int>> LocalDeviceCounts(const std::vector<std::string>& devices,
                                                       const DeviceFactoryRegistry& factories) {
  std::map<std::string, int> counts;
  for (const std::string& device : devices) {
    WEFT_ASSIGN_OR_RETURN(ParsedDeviceName parsed, ParseDeviceName(device));
    if (!parsed.has_type) continue;  // placed by the session's default, CPU:0
    WEFT_RETURN_IF_ERROR(factories.CheckDeviceType(parsed.type)
                             .WithContext(StrCat("the strategy's device ", device)));
    int& count = counts[parsed.type];
    count = std::max(count, parsed.has_id ? parsed.id + 1 : 1);
  }
  return counts;
}

}  // namespace

namespace {

// A model of one input and one output: its call on a signature of one of each.
Model::MultiCallFn FromSingle(Model::CallFn call) {
  return [call = std::move(call)](const Scope& scope, const std::vector<Output>& inputs) {
    return std::vector<Output>{call(scope, inputs[0])};
  };
}

const Model::Signature& SingleSignature() {
  static const auto* signature = new Model::Signature{{"inputs"}, {"outputs"}};
  return *signature;
}

// InvalidArgument unless `signature` has inputs and outputs with unique, non-empty names.
Status CheckSignature(const std::string& model, const Model::Signature& signature) {
  for (const auto* names : {&signature.inputs, &signature.outputs}) {
    const char* what = names == &signature.inputs ? "inputs" : "outputs";
    if (names->empty()) return InvalidArgument("model '", model, "' has no ", what);
    for (size_t i = 0; i < names->size(); ++i) {
      if ((*names)[i].empty()) {
        return InvalidArgument("model '", model, "': ", what, " ", i, " has no name");
      }
      if (std::find(names->begin(), names->begin() + i, (*names)[i]) != names->begin() + i) {
        return InvalidArgument("model '", model, "' names ", what, " '", (*names)[i], "' twice");
      }
    }
  }
  return Status::OK();
}

}  // namespace

Model::Model(CallFn call, std::string name)
    : name_(std::move(name)), signature_(SingleSignature()), call_(FromSingle(std::move(call))) {}
Model::Model(Signature signature, MultiCallFn call, std::string name)
    : name_(std::move(name)), signature_(std::move(signature)), call_(std::move(call)) {}
Model::Model(std::string name) : name_(std::move(name)), signature_(SingleSignature()) {}
Model::Model(Signature signature, std::string name)
    : name_(std::move(name)), signature_(std::move(signature)) {}

void Model::set_call(CallFn call) { call_ = FromSingle(std::move(call)); }

Model::~Model() {
  // A worker thread waiting for its lost worker to come back would hold up the coordinator.
  if (worker_sessions_ != nullptr) worker_sessions_->StopRecoveries();
  coordinator_.reset();
  if (session_ != nullptr) session_->Close().IgnoreError();
  session_.reset();  // it may run in the worker sessions
  worker_sessions_.reset();
}

Status Model::Compile(std::unique_ptr<Optimizer> optimizer, Loss loss,
                      const std::vector<std::string>& metrics, CompileOptions options) {
  if (!loss) return InvalidArgument("Compile: the loss is missing");
  return CompileWith(std::move(optimizer), std::vector<Loss>(signature_.outputs.size(), loss),
                     metrics, std::move(options));
}

Status Model::Compile(std::unique_ptr<Optimizer> optimizer, std::map<std::string, Loss> losses,
                      const std::vector<std::string>& metrics, CompileOptions options) {
  std::vector<Loss> ordered;
  for (const std::string& output : signature_.outputs) {
    auto found = losses.find(output);
    if (found == losses.end() || !found->second) {
      return InvalidArgument("Compile: model '", name_, "' has no loss for its output '", output,
                             "'");
    }
    ordered.push_back(std::move(found->second));
    losses.erase(found);
  }
  if (!losses.empty()) {
    return InvalidArgument("Compile: model '", name_, "' has no output '", losses.begin()->first,
                           "' (its outputs: ", StrJoin(signature_.outputs, ", "), ")");
  }
  return CompileWith(std::move(optimizer), std::move(ordered), metrics, std::move(options));
}

Status Model::CompileWith(std::unique_ptr<Optimizer> optimizer, std::vector<Loss> losses,
                          const std::vector<std::string>& metrics, CompileOptions options) {
  if (strategy_ != nullptr) return FailedPrecondition("model '", name_, "' is already compiled");
  WEFT_RETURN_IF_ERROR(CheckSignature(name_, signature_));
  if (optimizer == nullptr) return InvalidArgument("Compile: the optimizer is missing");
  if (options.steps_per_execution < 1) {
    return InvalidArgument("Compile: steps_per_execution must be at least 1, got ",
                           options.steps_per_execution);
  }
  if (options.exactly_once_input) {
    const bool asynchronous = options.strategy != nullptr &&
                              !options.strategy->extended().WorkerSessionOptions({}).empty();
    if (!asynchronous) {
      return InvalidArgument(
          "Compile: exactly_once_input needs an asynchronous strategy (ParameterServerStrategy), "
          "whose coordinator commits each step's updates");
    }
    if (options.steps_per_execution != 1) {
      return InvalidArgument("Compile: exactly_once_input needs steps_per_execution 1, got ",
                             options.steps_per_execution);
    }
  }
  for (const auto& [output, weight] : options.loss_weights) {
    if (std::find(signature_.outputs.begin(), signature_.outputs.end(), output) ==
        signature_.outputs.end()) {
      return InvalidArgument("Compile: loss_weights names '", output,
                             "', which is not an output of model '", name_, "'");
    }
  }
  std::vector<double> weights;
  for (const std::string& output : signature_.outputs) {
    auto found = options.loss_weights.find(output);
    weights.push_back(found == options.loss_weights.end() ? 1.0 : found->second);
  }
  std::vector<std::vector<Metric>> resolved(losses.size());
  for (size_t o = 0; o < losses.size(); ++o) {
    for (const std::string& metric : metrics) {
      WEFT_ASSIGN_OR_RETURN(Metric made, GetMetric(metric, losses[o]));
      resolved[o].push_back(std::move(made));
    }
  }
  if (options.strategy == nullptr) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<distribute::OneDeviceStrategy> one,
                          distribute::OneDeviceStrategy::Create("/cpu:0"));
    owned_strategy_ = std::move(one);
    options.strategy = owned_strategy_.get();
  }
  optimizer_ = std::move(optimizer);
  learning_rate_ = optimizer_->learning_rate();
  losses_ = std::move(losses);
  loss_weights_ = std::move(weights);
  metrics_ = std::move(resolved);
  options_ = std::move(options);
  strategy_ = options_.strategy;
  return Status::OK();
}

Status Model::Build(const InputSpec& input) { return Build(std::vector<InputSpec>{input}); }

Status Model::Build(const std::vector<InputSpec>& inputs) {
  if (inputs.size() != signature_.inputs.size()) {
    return InvalidArgument("Build: model '", name_, "' has ", signature_.inputs.size(), " inputs (",
                           StrJoin(signature_.inputs, ", "), "), got ", inputs.size());
  }
  return EnsureBuilt(inputs, nullptr);
}

Status Model::EnsureBuilt(const std::vector<InputSpec>& inputs, const std::vector<Tensor>* labels) {
  if (strategy_ == nullptr) return FailedPrecondition("model '", name_, "' is not compiled");
  if (!call_) return FailedPrecondition("model '", name_, "' has no layers");
  const distribute::Strategy& strategy = *strategy_;
  ModelGraph& graph = EnsureGraph();
  if (graph.has_inference || graph.has_training) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const InputSpec& built = graph.inputs[i];
      if (inputs[i].dtype != built.dtype || !built.shape.Merge(inputs[i].shape).ok()) {
        const std::string what =
            inputs.size() > 1 ? StrCat("input '", signature_.inputs[i], "' of ") : "inputs ";
        return InvalidArgument("model '", name_, "' was built for ", what,
                               DataTypeName(built.dtype), " ", WithBatch(built.shape).DebugString(),
                               ", got ", DataTypeName(inputs[i].dtype), " ",
                               WithBatch(inputs[i].shape).DebugString());
      }
    }
  }
  const bool build_training = labels != nullptr && !graph.has_training;
  const bool build_inference = !graph.has_inference;
  if (!build_training && !build_inference) return LoadPendingWeights();
  graph.inputs = inputs;
  distribute::StrategyScope in_scope = strategy.Scope();
  std::unique_ptr<ModelGraphBuilder> made = NewGraphBuilder(labels);
  ModelGraphBuilder& builder = *made;
  if (build_training) {
    WEFT_RETURN_IF_ERROR(builder.BuildMetricTotals());
    const int first_training_node = graph.root.graph()->num_node_ids();
    WEFT_RETURN_IF_ERROR(builder.BuildTrainingPart());
    if (options_.exactly_once_input) {
      WEFT_ASSIGN_OR_RETURN(distribute::StagedUpdates staged,
                            distribute::StageUpdates(*graph.root.graph(), graph.training.steps[0],
                                                     first_training_node, "exactly_once"));
      exactly_once_ = std::make_unique<ExactlyOnceSteps>(std::move(staged));
    }
    if (options_.steps_per_execution > 1) {
      // Its collectives run in steps of their own: chained apart from the one-step graph's.
      std::vector<Output> one_step_chain = strategy.extended().TakeCollectiveOrdering();
      Status built = builder.BuildTrainingPart(options_.steps_per_execution);
      strategy.extended().SetCollectiveOrdering(std::move(one_step_chain));
      WEFT_RETURN_IF_ERROR(built);
    }
    WEFT_RETURN_IF_ERROR(builder.BuildEvaluationPart());
    AdoptNewVariables();
    WEFT_RETURN_IF_ERROR(builder.BuildMetricResults());
    WEFT_RETURN_IF_ERROR(builder.BuildLearningRate());
    WEFT_RETURN_IF_ERROR(builder.BuildSyncOnReadMeans());
    graph.has_training = true;
  }
  if (build_inference) {
    WEFT_RETURN_IF_ERROR(builder.BuildInferencePart());
    graph.has_inference = true;
  }
  WEFT_RETURN_IF_ERROR(graph.root.status());
  WEFT_RETURN_IF_ERROR(SendPendingNodes());
  return LoadPendingWeights();
}

std::unique_ptr<ModelGraphBuilder> Model::NewGraphBuilder(const std::vector<Tensor>* labels) {
  // The seed as it is now: a global seed set after Compile still counts.
  const std::optional<int64_t> seed =
      options_.seed.has_value() ? options_.seed : GlobalRandomSeed();
  return std::make_unique<ModelGraphBuilder>(
      *strategy_,
      ModelGraphBuilder::ModelParts{name_, signature_, call_, losses_, loss_weights_, *optimizer_,
                                    metrics_, seed, options_.dtype_policy.compute_dtype},
      *graph_, graph_->inputs, labels);
}

Status Model::SendPendingNodes() {
  AdoptNewVariables();
  std::vector<Output> initializers = std::move(graph_->pending_initializers);
  graph_->pending_initializers.clear();
  return SendNewNodes(std::move(initializers));
}

ModelGraph& Model::EnsureGraph() {
  if (graph_ == nullptr) {
    graph_ = std::make_unique<ModelGraph>(Scope::NewRootScope());
    // Variables the strategy already holds belong to other models sharing it.
    graph_->adopted_variables = strategy_->variables().size();
  }
  return *graph_;
}

Status Model::BuildPerWorkerTraining(const std::vector<Output>& element,
                                     const std::vector<Tensor>& labels) {
  ModelGraph& graph = EnsureGraph();
  distribute::StrategyScope in_scope = strategy_->Scope();
  WEFT_RETURN_IF_ERROR(NewGraphBuilder(&labels)->BuildPerWorkerTrainingPart(element));
  WEFT_RETURN_IF_ERROR(graph.root.status());
  return SendPendingNodes();
}

void Model::AdoptNewVariables() {
  ModelGraph& graph = *graph_;
  const auto variables = strategy_->variables();
  for (size_t i = graph.adopted_variables; i < variables.size(); ++i) {
    graph.pending_initializers.push_back(variables[i]->initializer());
    graph.variables.push_back(variables[i]);
  }
  graph.adopted_variables = variables.size();
}

Status Model::AddToGraph(const std::function<Status(const Scope& root)>& build) {
  if (graph_ == nullptr || session_ == nullptr) {
    return FailedPrecondition("model '", name_, "' is not built yet");
  }
  WEFT_RETURN_IF_ERROR(build(graph_->root));
  WEFT_RETURN_IF_ERROR(graph_->root.status());
  return SendNewNodes({});
}

Status Model::SendNewNodes(std::vector<Output> initializers) {
  const Scope& root = graph_->root;
  std::string broadcast;
  const distribute::StrategyExtended& policy = strategy_->extended();
  if (!initializers.empty()) {
    WEFT_ASSIGN_OR_RETURN(Output synchronize,
                          policy.SynchronizeInitialValues(root, strategy_->variables()));
    if (synchronize) broadcast = synchronize.name();
  }
  std::string init;
  if (!initializers.empty()) {
    init = ops::NoOp(root.WithOpName("init").WithControlDependencies(initializers)).name();
  }
  WEFT_ASSIGN_OR_RETURN(proto::GraphDef whole, root.ToGraphDef());
  proto::GraphDef delta = whole;
  delta.clear_node();
  for (const proto::NodeDef& node : whole.node()) {
    if (graph_->sent.insert(node.name()).second) *delta.add_node() = node;
  }
  if (session_ == nullptr) {
    SessionOptions session_options;
    session_options.target = options_.target;
    session_options.config = options_.session_config;
    if (options_.target.empty()) {
      session_options.device_factories = options_.device_factories;
      session_options.kernel_registry = options_.kernel_registry;
      WEFT_ASSIGN_OR_RETURN(
          auto counts, LocalDeviceCounts(strategy_->devices(), options_.device_factories != nullptr
                                                                   ? *options_.device_factories
                                                                   : DefaultDeviceFactories()));
      for (const auto& [type, count] : counts) {
        (*session_options.config.mutable_device_count())[type] = count;
      }
    }
    policy.ConfigureSession(&session_options);
    // A partition woken by another (a _Recv, a collective) continues on an inter-op thread: one
    // per replica (measured with W1 on 2 devices of 2 cores: 1 thread ~40k images/s, 2 ~63k).
    session_options.config.set_inter_op_parallelism_threads(options_.inter_op_threads > 0
                                                                ? options_.inter_op_threads
                                                                : strategy_->num_local_replicas());
    if (options_.intra_op_threads > 0) {
      session_options.config.set_intra_op_parallelism_threads(options_.intra_op_threads);
    }
    WEFT_RETURN_IF_ERROR(StartWorkerSessions(session_options, delta));
    if (session_ == nullptr) {
      WEFT_ASSIGN_OR_RETURN(session_, NewSession(session_options));
      WEFT_RETURN_IF_ERROR(session_->Create(delta));
    }
  } else if (delta.node_size() > 0) {
    WEFT_RETURN_IF_ERROR(session_->Extend(delta));
  }
  std::vector<Tensor> outputs;
  if (!init.empty()) WEFT_RETURN_IF_ERROR(session_->Run({}, {}, {init}, &outputs));
  if (!broadcast.empty()) WEFT_RETURN_IF_ERROR(session_->Run({}, {}, {broadcast}, &outputs));
  return Status::OK();
}

Status Model::StartWorkerSessions(const SessionOptions& configured, const proto::GraphDef& graph) {
  std::vector<SessionOptions> workers = strategy_->extended().WorkerSessionOptions(configured);
  if (workers.empty()) return Status::OK();
  distribute::ClusterCoordinatorOptions coordinator;
  for (size_t w = 0; w < workers.size(); ++w) {
    coordinator.worker_names.push_back(StrCat("/job:worker/replica:0/task:", w));
  }
  // Each worker steps in a session of its own, so that a lost worker's session is re-created
  // without touching the others'; the model's own calls run in any worker that is there.
  WEFT_ASSIGN_OR_RETURN(
      worker_sessions_,
      WorkerSessions::Create(std::move(workers), coordinator.worker_names, graph,
                             [this](Session& session, const std::vector<std::string>& tasks) {
                               return RestoreTasks(session, tasks);
                             }));
  session_ = worker_sessions_->NewAnyWorkerSession();
  const std::chrono::milliseconds recovery_timeout(options_.worker_recovery_timeout_ms);
  coordinator.recover_worker = [sessions = worker_sessions_.get(), recovery_timeout](int worker) {
    return sessions->Recover(worker, recovery_timeout);
  };
  coordinator.on_rescheduled = [sessions = worker_sessions_.get()](int worker, int64_t function,
                                                                   const Status& why) {
    WEFT_LOG(WARNING) << "step function " << function << " lost with worker "
                      << sessions->name(worker) << " (" << why << "); rescheduled on another";
  };
  coordinator.on_retired = [sessions = worker_sessions_.get()](int worker, const Status& why) {
    WEFT_LOG(WARNING) << "worker " << sessions->name(worker)
                      << " is retired; the others carry on: " << why;
  };
  coordinator_ = std::make_unique<distribute::ClusterCoordinator>(worker_sessions_->size(),
                                                                  std::move(coordinator));
  return Status::OK();
}

Status Model::PrepareSnapshots() {
  if (coordinator_ == nullptr || options_.snapshot_every_steps <= 0 || snapshot_ != nullptr) {
    return Status::OK();
  }
  std::unique_ptr<VariableSnapshot> snapshot;
  WEFT_RETURN_IF_ERROR(AddToGraph([&](const Scope& root) -> Status {
    WEFT_ASSIGN_OR_RETURN(
        snapshot, VariableSnapshot::Create(root.NewSubScope("snapshot"), graph_->variables));
    return Status::OK();
  }));
  WEFT_RETURN_IF_ERROR(snapshot->Take(*session_, position_.global_step));
  // Set before Fit schedules a step, so every worker's thread sees it.
  snapshot_ = std::move(snapshot);
  return Status::OK();
}

Status Model::MaybeSnapshot(int64_t global_step) {
  steps_finished_.store(global_step);
  if (snapshot_ == nullptr || global_step % options_.snapshot_every_steps != 0) {
    return Status::OK();
  }
  Status taken = snapshot_->Take(*session_, global_step);
  // A ps task that is down or not yet restored cannot be read: keep the last snapshot.
  if (!taken.ok())
    WEFT_LOG(WARNING) << "kept the snapshot of step " << snapshot_->step() << ": " << taken;
  return Status::OK();
}

Status Model::RestoreTasks(Session& session, const std::vector<std::string>& tasks) {
  const std::string names = StrJoin(tasks, ", ");
  const int64_t snapshot_step = snapshot_ != nullptr ? snapshot_->step() : -1;
  MutexLock lock(recovery_mu_);
  std::optional<std::pair<std::string, int64_t>> checkpoint;
  if (recovery_checkpoints_ != nullptr) {
    WEFT_ASSIGN_OR_RETURN(checkpoint, recovery_checkpoints_->Latest());
  }
  int restored = 0;
  int64_t step = 0;
  std::string from;
  if (checkpoint.has_value() && checkpoint->second > snapshot_step) {
    // Written by each ps task itself, so no variable passed through this process.
    WEFT_ASSIGN_OR_RETURN(restored,
                          recovery_checkpoints_->RestoreTasks(session, checkpoint->first, tasks));
    step = checkpoint->second;
    from = StrCat("the checkpoint ", checkpoint->first, " of step ", step,
                  snapshot_ != nullptr
                      ? StrCat(" (newer than the snapshot of step ", snapshot_step, ")")
                      : std::string(" (no snapshot is kept: snapshot_every_steps is 0)"));
  } else if (snapshot_ != nullptr) {
    WEFT_ASSIGN_OR_RETURN(restored, snapshot_->Restore(session, tasks));
    step = snapshot_step;
    from = StrCat("the snapshot of step ", step);
  } else {
    return FailedPrecondition(
        names, " restarted and lost its variables, and no snapshot of them was kept ",
        "(CompileOptions::snapshot_every_steps is 0) nor a checkpoint written (ModelCheckpoint)");
  }
  const int64_t lost = std::max<int64_t>(0, steps_finished_.load() - step);
  ps_recoveries_ += static_cast<int64_t>(tasks.size());
  steps_lost_ += lost;
  WEFT_LOG(WARNING) << names << " restarted and lost its variables: restored " << restored
                    << " of them from " << from << " (" << lost << " steps lost)";
  return Status::OK();
}

int64_t Model::rescheduled_steps() const {
  return coordinator_ != nullptr ? coordinator_->rescheduled() : 0;
}

int64_t Model::worker_recoveries() const {
  return worker_sessions_ != nullptr ? worker_sessions_->recoveries() : 0;
}

int64_t Model::per_worker_datasets_rebuilt() const {
  return coordinator_ != nullptr ? coordinator_->resources_recreated() : 0;
}

std::vector<std::shared_ptr<distribute::DistributedVariable>> Model::distributed_variables() const {
  if (graph_ == nullptr) return {};
  return graph_->variables;
}

std::vector<Variable> Model::variables() const { return LayerVariables(/*trainable_only=*/false); }

std::vector<Variable> Model::trainable_variables() const {
  return LayerVariables(/*trainable_only=*/true);
}

std::vector<Variable> Model::LayerVariables(bool trainable_only) const {
  std::vector<Variable> all;
  if (graph_ == nullptr) return all;
  for (const LayerCallContext::Call& call : graph_->calls) {
    std::vector<Variable> own =
        trainable_only ? call.layer->trainable_variables() : call.layer->variables();
    all.insert(all.end(), own.begin(), own.end());
  }
  return all;
}

Output Sequential::Apply(const Scope& scope, const Output& input) {
  Output x = input;
  for (const std::unique_ptr<Layer>& layer : layers_) x = (*layer)(scope, x);
  return x;
}

}  // namespace weft::train
