#include "weft/train/model.h"

#include <algorithm>

#include "weft/core/str_util.h"
#include "weft/train/model_graph.h"

namespace weft::train {
namespace {

PartialShape WithBatch(const PartialShape& example) {
  std::vector<int64_t> dims = {-1};
  if (example.rank_known()) dims.insert(dims.end(), example.dims().begin(), example.dims().end());
  return PartialShape(std::move(dims));
}

// The unique layers of `calls`, first call first.
std::vector<LayerCallContext::Call> UniqueCalls(const std::vector<LayerCallContext::Call>& calls) {
  std::vector<LayerCallContext::Call> unique;
  for (const LayerCallContext::Call& call : calls) {
    bool seen = std::any_of(unique.begin(), unique.end(),
                            [&](const auto& other) { return other.layer == call.layer; });
    if (!seen) unique.push_back(call);
  }
  return unique;
}

std::vector<Variable> TrainableIn(const std::vector<LayerCallContext::Call>& calls,
                                  const Graph* graph, int replica) {
  std::vector<Variable> variables;
  for (const LayerCallContext::Call& call : UniqueCalls(calls)) {
    std::vector<Variable> own = call.layer->VariablesIn(graph, replica, /*trainable_only=*/true);
    variables.insert(variables.end(), own.begin(), own.end());
  }
  return variables;
}

// The highest "CPU:<k>" of `devices`, plus one: the CPU devices a local session needs.
int CpuDeviceCount(const std::vector<std::string>& devices) {
  int count = 1;
  for (const std::string& device : devices) {
    size_t colon = device.rfind(':');
    if (colon == std::string::npos) continue;
    count = std::max(count, std::atoi(device.c_str() + colon + 1) + 1);
  }
  return count;
}

// A metric's running totals: sync-on-read SUM variables, one component per replica.
struct MetricTotals {
  std::shared_ptr<distribute::DistributedVariable> total, count;
};

}  // namespace

Model::Model(CallFn call, std::string name) : name_(std::move(name)), call_(std::move(call)) {}
Model::Model(std::string name) : name_(std::move(name)) {}

Model::~Model() {
  if (session_ != nullptr) session_->Close().IgnoreError();
}

Status Model::Compile(std::unique_ptr<Optimizer> optimizer, Loss loss,
                      const std::vector<std::string>& metrics, CompileOptions options) {
  if (strategy_ != nullptr) return FailedPrecondition("model '", name_, "' is already compiled");
  if (optimizer == nullptr) return InvalidArgument("Compile: the optimizer is missing");
  if (!loss) return InvalidArgument("Compile: the loss is missing");
  std::vector<Metric> resolved;
  for (const std::string& metric : metrics) {
    WEFT_ASSIGN_OR_RETURN(Metric made, GetMetric(metric, loss));
    resolved.push_back(std::move(made));
  }
  if (options.strategy == nullptr) {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<distribute::OneDeviceStrategy> one,
                          distribute::OneDeviceStrategy::Create("/cpu:0"));
    owned_strategy_ = std::move(one);
    options.strategy = owned_strategy_.get();
  }
  optimizer_ = std::move(optimizer);
  learning_rate_ = optimizer_->learning_rate();
  loss_ = std::move(loss);
  metrics_ = std::move(resolved);
  options_ = options;
  strategy_ = options.strategy;
  return Status::OK();
}

Status Model::Build(const InputSpec& input) { return EnsureBuilt(input, nullptr); }

Status Model::EnsureBuilt(const InputSpec& input, const Tensor* labels) {
  if (strategy_ == nullptr) return FailedPrecondition("model '", name_, "' is not compiled");
  if (!call_) return FailedPrecondition("model '", name_, "' has no layers");
  const distribute::Strategy& strategy = *strategy_;
  if (graph_ == nullptr) {
    graph_ = std::make_unique<ModelGraph>(Scope::NewRootScope());
    // Variables the strategy already holds belong to other models sharing it.
    graph_->adopted_variables = strategy.variables().size();
  }
  ModelGraph& graph = *graph_;
  if (graph.has_inference || graph.has_training) {
    if (input.dtype != graph.input.dtype || !graph.input.shape.Merge(input.shape).ok()) {
      return InvalidArgument("model '", name_, "' was built for inputs ",
                             DataTypeName(graph.input.dtype), " ",
                             WithBatch(graph.input.shape).DebugString(), ", got ",
                             DataTypeName(input.dtype), " ", WithBatch(input.shape).DebugString());
    }
  }
  const bool build_training = labels != nullptr && !graph.has_training;
  const bool build_inference = !graph.has_inference;
  if (!build_training && !build_inference) return Status::OK();
  graph.input = input;
  const Scope& root = graph.root;
  const Graph* raw_graph = root.graph();
  distribute::StrategyScope in_scope = strategy.Scope();
  const int replicas = strategy.num_local_replicas();

  // Labels [batch, ...] as the first batch's, with any batch size.
  PartialShape label_shape;
  if (labels != nullptr) {
    std::vector<int64_t> dims = {-1};
    for (int i = 1; i < labels->dims(); ++i) dims.push_back(labels->dim_size(i));
    label_shape = PartialShape(std::move(dims));
  }

  // Builds one part: per replica, placeholders, the model, and `finish`'s outputs and steps.
  using Finish =
      std::function<Status(distribute::ReplicaContext & context, const Scope& scope,
                           const Output& inputs, const Output& labels, const Output& predictions,
                           LayerCallContext& calls, std::vector<Output>* outputs)>;
  auto build_part = [&](bool training, bool with_labels, ReplicaNames* names,
                        const Finish& finish) -> Status {
    names->inputs.assign(replicas, "");
    names->labels.assign(with_labels ? replicas : 0, "");
    names->outputs.assign(replicas, "");
    names->steps.assign(replicas, "");
    auto replica_fn = [&](distribute::ReplicaContext& context,
                          const Scope& scope) -> StatusOr<std::vector<Output>> {
      const int r = context.replica_id();
      Output inputs = ops::Placeholder(scope.WithOpName(training ? "inputs" : "eval_inputs"),
                                       input.dtype, WithBatch(input.shape));
      Output label_placeholder;
      if (with_labels) {
        label_placeholder = ops::Placeholder(scope.WithOpName(training ? "labels" : "eval_labels"),
                                             labels->dtype(), label_shape);
      }
      LayerCallContext calls(training);
      Output predictions = call_(scope, inputs);
      WEFT_RETURN_IF_ERROR(scope.status());
      if (!predictions) return InvalidArgument("model '", name_, "' built no output");
      if (r == 0 && graph.calls.empty()) graph.calls = UniqueCalls(calls.calls());
      std::vector<Output> outputs;
      WEFT_RETURN_IF_ERROR(
          finish(context, scope, inputs, label_placeholder, predictions, calls, &outputs));
      WEFT_RETURN_IF_ERROR(scope.status());
      names->inputs[r] = inputs.name();
      if (with_labels) names->labels[r] = label_placeholder.name();
      names->outputs[r] = outputs[0].name();
      if (outputs.size() > 1) names->steps[r] = outputs[1].name();
      return outputs;
    };
    return strategy.Run(root, replica_fn).status();
  };

  if (build_training) {
    // The totals of the loss and of each metric.
    std::vector<MetricTotals> totals;
    graph.metric_names = {"loss"};
    for (const Metric& metric : metrics_) graph.metric_names.push_back(metric.name());
    Scope metrics_scope = root.NewSubScope("metrics");
    for (const std::string& metric : graph.metric_names) {
      MetricTotals made;
      const Scope metric_scope = metrics_scope.NewSubScope(metric);
      for (auto [name, slot] : {std::pair{"total", &made.total}, std::pair{"count", &made.count}}) {
        WEFT_ASSIGN_OR_RETURN(
            *slot, strategy.CreateVariable(metric_scope, name, TensorShape(), DataType::kFloat,
                                           Initializer::Zeros(), VariableSynchronization::kOnRead,
                                           VariableAggregation::kSum));
        graph.pending_initializers.push_back((*slot)->initializer());
        graph.variables.push_back(*slot);
      }
      totals.push_back(std::move(made));
    }
    // Adds this replica's batch to its components of the totals.
    auto update_metrics = [&](int r, const Scope& scope, const Output& inputs, const Output& labels,
                              const Output& predictions, const Output& loss) {
      Scope update = scope.NewSubScope("update_metrics");
      // This replica's examples, as a float scalar.
      Output batch = ops::Cast(
          update, ops::Sum(update, ops::Slice(update, ops::Shape(update, inputs), {0}, {1}), 0),
          DataType::kFloat);
      std::vector<Output> updates = {
          totals[0].total->component(r).AssignAdd(update, ops::Mul(update, loss, batch)),
          totals[0].count->component(r).AssignAdd(update, batch)};
      for (size_t m = 0; m < metrics_.size(); ++m) {
        Output values = metrics_[m](update, labels, predictions);
        updates.push_back(
            totals[m + 1].total->component(r).AssignAdd(update, ops::Sum(update, values, 0)));
        updates.push_back(totals[m + 1].count->component(r).AssignAdd(
            update, ops::Cast(update, ops::Size(update, values), DataType::kFloat)));
      }
      return updates;
    };
    WEFT_RETURN_IF_ERROR(build_part(
        /*training=*/true, /*with_labels=*/true, &graph.training,
        [&](distribute::ReplicaContext& context, const Scope& scope, const Output& inputs,
            const Output& labels, const Output& predictions, LayerCallContext& calls,
            std::vector<Output>* outputs) -> Status {
          Output loss = loss_(scope, labels, predictions);
          WEFT_RETURN_IF_ERROR(scope.status());
          WEFT_ASSIGN_OR_RETURN(
              Output train_op,
              optimizer_->Minimize(scope, loss,
                                   TrainableIn(calls.calls(), raw_graph, context.replica_id()),
                                   &context));
          std::vector<Output> step = {train_op};
          step.insert(step.end(), calls.updates().begin(), calls.updates().end());
          std::vector<Output> metric_updates =
              update_metrics(context.replica_id(), scope, inputs, labels, predictions, loss);
          step.insert(step.end(), metric_updates.begin(), metric_updates.end());
          *outputs = {loss,
                      ops::NoOp(scope.WithOpName("train_step").WithControlDependencies(step))};
          return Status::OK();
        }));
    WEFT_RETURN_IF_ERROR(build_part(
        /*training=*/false, /*with_labels=*/true, &graph.evaluation,
        [&](distribute::ReplicaContext& context, const Scope& scope, const Output& inputs,
            const Output& labels, const Output& predictions, LayerCallContext&,
            std::vector<Output>* outputs) -> Status {
          Output loss = loss_(scope, labels, predictions);
          std::vector<Output> metric_updates =
              update_metrics(context.replica_id(), scope, inputs, labels, predictions, loss);
          *outputs = {
              loss,
              ops::NoOp(scope.WithOpName("eval_step").WithControlDependencies(metric_updates))};
          return Status::OK();
        }));
    AdoptNewVariables();
    // The results (cross-replica reads), their reset, the learning rate and the moving
    // statistics' synchronisation.
    Scope results = root.NewSubScope("metric_results");
    std::vector<Output> resets;
    for (const MetricTotals& metric : totals) {
      WEFT_ASSIGN_OR_RETURN(Output total, metric.total->Read(results, nullptr));
      WEFT_ASSIGN_OR_RETURN(Output count, metric.count->Read(results, nullptr));
      graph.metric_results.push_back(
          ops::Div(results, total, ops::Maximum(results, count, ops::Const(results, 1e-12f)))
              .name());
      for (const auto& variable : {metric.total, metric.count}) {
        WEFT_ASSIGN_OR_RETURN(Output reset,
                              variable->Assign(results, ops::Const(results, 0.0f), nullptr));
        resets.push_back(reset);
      }
    }
    graph.reset_metrics =
        ops::NoOp(results.WithOpName("reset").WithControlDependencies(resets)).name();
    Scope learning_rate = root.NewSubScope("learning_rate");
    Output value =
        ops::Placeholder(learning_rate.WithOpName("value"), DataType::kFloat, PartialShape({}));
    graph.learning_rate_value = value.name();
    WEFT_ASSIGN_OR_RETURN(Output assign, optimizer_->AssignLearningRate(learning_rate, value));
    graph.assign_learning_rate = assign.name();
    std::vector<Output> syncs;
    if (strategy.num_replicas_in_sync() > 1) {
      Scope sync = root.NewSubScope("sync_on_read_means");
      for (const auto& variable : graph.variables) {
        if (variable->synchronization() != VariableSynchronization::kOnRead ||
            variable->aggregation() != VariableAggregation::kMean) {
          continue;
        }
        WEFT_ASSIGN_OR_RETURN(Output mean, variable->Read(sync, nullptr));
        WEFT_ASSIGN_OR_RETURN(Output assigned, variable->Assign(sync, mean, nullptr));
        syncs.push_back(assigned);
      }
    }
    if (!syncs.empty()) {
      graph.sync_on_read_means =
          ops::NoOp(root.WithOpName("sync_on_read_means").WithControlDependencies(syncs)).name();
    }
    graph.has_training = true;
  }
  if (build_inference) {
    WEFT_RETURN_IF_ERROR(build_part(
        /*training=*/false, /*with_labels=*/false, &graph.inference,
        [](distribute::ReplicaContext&, const Scope&, const Output&, const Output&,
           const Output& predictions, LayerCallContext&, std::vector<Output>* outputs) {
          *outputs = {predictions};
          return Status::OK();
        }));
    graph.has_inference = true;
  }
  WEFT_RETURN_IF_ERROR(root.status());

  // Sends what is new to the session and initializes the new variables.
  AdoptNewVariables();
  std::vector<Output> initializers = std::move(graph.pending_initializers);
  graph.pending_initializers.clear();
  return SendNewNodes(std::move(initializers));
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
      (*session_options.config.mutable_device_count())["CPU"] =
          CpuDeviceCount(strategy_->devices());
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
    WEFT_ASSIGN_OR_RETURN(session_, NewSession(session_options));
    WEFT_RETURN_IF_ERROR(session_->Create(delta));
  } else if (delta.node_size() > 0) {
    WEFT_RETURN_IF_ERROR(session_->Extend(delta));
  }
  std::vector<Tensor> outputs;
  if (!init.empty()) WEFT_RETURN_IF_ERROR(session_->Run({}, {}, {init}, &outputs));
  if (!broadcast.empty()) WEFT_RETURN_IF_ERROR(session_->Run({}, {}, {broadcast}, &outputs));
  return Status::OK();
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
