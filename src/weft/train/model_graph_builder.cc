#include "weft/train/model_graph_builder.h"

#include <algorithm>
#include <utility>

namespace weft::train {
namespace {

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

}  // namespace

PartialShape WithBatch(const PartialShape& example) {
  std::vector<int64_t> dims = {-1};
  if (example.rank_known()) dims.insert(dims.end(), example.dims().begin(), example.dims().end());
  return PartialShape(std::move(dims));
}

ModelGraphBuilder::ModelGraphBuilder(const distribute::Strategy& strategy, ModelParts model,
                                     ModelGraph& graph, const InputSpec& input,
                                     const Tensor* labels)
    : strategy_(strategy), model_(model), graph_(graph), input_(input), labels_(labels) {
  if (labels != nullptr) {
    std::vector<int64_t> dims = {-1};
    for (int i = 1; i < labels->dims(); ++i) dims.push_back(labels->dim_size(i));
    label_shape_ = PartialShape(std::move(dims));
  }
}

Status ModelGraphBuilder::BuildPart(bool training, bool with_labels, ReplicaNames* names,
                                    const Finish& finish) {
  const int replicas = strategy_.num_local_replicas();
  names->inputs.assign(replicas, "");
  names->labels.assign(with_labels ? replicas : 0, "");
  names->outputs.assign(replicas, "");
  names->steps.assign(replicas, "");
  auto replica_fn = [&](distribute::ReplicaContext& context,
                        const Scope& scope) -> StatusOr<std::vector<Output>> {
    const int r = context.replica_id();
    Output inputs = ops::Placeholder(scope.WithOpName(training ? "inputs" : "eval_inputs"),
                                     input_.dtype, WithBatch(input_.shape));
    Output label_placeholder;
    if (with_labels) {
      label_placeholder = ops::Placeholder(scope.WithOpName(training ? "labels" : "eval_labels"),
                                           labels_->dtype(), label_shape_);
    }
    LayerCallContext calls(training);
    Output predictions = model_.call(scope, inputs);
    WEFT_RETURN_IF_ERROR(scope.status());
    if (!predictions) return InvalidArgument("model '", model_.name, "' built no output");
    if (r == 0 && graph_.calls.empty()) graph_.calls = UniqueCalls(calls.calls());
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
  return strategy_.Run(graph_.root, replica_fn).status();
}

Status ModelGraphBuilder::BuildMetricTotals() {
  graph_.metric_names = {"loss"};
  for (const Metric& metric : model_.metrics) graph_.metric_names.push_back(metric.name());
  Scope metrics_scope = graph_.root.NewSubScope("metrics");
  for (const std::string& metric : graph_.metric_names) {
    MetricTotals made;
    const Scope metric_scope = metrics_scope.NewSubScope(metric);
    for (auto [name, slot] : {std::pair{"total", &made.total}, std::pair{"count", &made.count}}) {
      WEFT_ASSIGN_OR_RETURN(
          *slot, strategy_.CreateVariable(metric_scope, name, TensorShape(), DataType::kFloat,
                                          Initializer::Zeros(), VariableSynchronization::kOnRead,
                                          VariableAggregation::kSum));
      graph_.pending_initializers.push_back((*slot)->initializer());
      graph_.variables.push_back(*slot);
    }
    totals_.push_back(std::move(made));
  }
  return Status::OK();
}

std::vector<Output> ModelGraphBuilder::UpdateMetrics(int replica, const Scope& scope,
                                                     const Output& inputs, const Output& labels,
                                                     const Output& predictions,
                                                     const Output& loss) {
  Scope update = scope.NewSubScope("update_metrics");
  // This replica's examples, as a float scalar.
  Output batch = ops::Cast(
      update, ops::Sum(update, ops::Slice(update, ops::Shape(update, inputs), {0}, {1}), 0),
      DataType::kFloat);
  std::vector<Output> updates = {
      totals_[0].total->component(replica).AssignAdd(update, ops::Mul(update, loss, batch)),
      totals_[0].count->component(replica).AssignAdd(update, batch)};
  for (size_t m = 0; m < model_.metrics.size(); ++m) {
    Output values = model_.metrics[m](update, labels, predictions);
    updates.push_back(
        totals_[m + 1].total->component(replica).AssignAdd(update, ops::Sum(update, values, 0)));
    updates.push_back(totals_[m + 1].count->component(replica).AssignAdd(
        update, ops::Cast(update, ops::Size(update, values), DataType::kFloat)));
  }
  return updates;
}

Status ModelGraphBuilder::BuildTrainingPart() {
  const Graph* raw_graph = graph_.root.graph();
  return BuildPart(
      /*training=*/true, /*with_labels=*/true, &graph_.training,
      [&](distribute::ReplicaContext& context, const Scope& scope, const Output& inputs,
          const Output& labels, const Output& predictions, LayerCallContext& calls,
          std::vector<Output>* outputs) -> Status {
        Output loss = model_.loss(scope, labels, predictions);
        WEFT_RETURN_IF_ERROR(scope.status());
        WEFT_ASSIGN_OR_RETURN(
            Output train_op,
            model_.optimizer.Minimize(scope, loss,
                                      TrainableIn(calls.calls(), raw_graph, context.replica_id()),
                                      &context));
        std::vector<Output> step = {train_op};
        step.insert(step.end(), calls.updates().begin(), calls.updates().end());
        std::vector<Output> metric_updates =
            UpdateMetrics(context.replica_id(), scope, inputs, labels, predictions, loss);
        step.insert(step.end(), metric_updates.begin(), metric_updates.end());
        *outputs = {loss, ops::NoOp(scope.WithOpName("train_step").WithControlDependencies(step))};
        return Status::OK();
      });
}

Status ModelGraphBuilder::BuildEvaluationPart() {
  return BuildPart(
      /*training=*/false, /*with_labels=*/true, &graph_.evaluation,
      [&](distribute::ReplicaContext& context, const Scope& scope, const Output& inputs,
          const Output& labels, const Output& predictions, LayerCallContext&,
          std::vector<Output>* outputs) -> Status {
        Output loss = model_.loss(scope, labels, predictions);
        std::vector<Output> metric_updates =
            UpdateMetrics(context.replica_id(), scope, inputs, labels, predictions, loss);
        *outputs = {
            loss, ops::NoOp(scope.WithOpName("eval_step").WithControlDependencies(metric_updates))};
        return Status::OK();
      });
}

Status ModelGraphBuilder::BuildMetricResults() {
  Scope results = graph_.root.NewSubScope("metric_results");
  std::vector<Output> resets;
  for (const MetricTotals& metric : totals_) {
    WEFT_ASSIGN_OR_RETURN(Output total, metric.total->Read(results, nullptr));
    WEFT_ASSIGN_OR_RETURN(Output count, metric.count->Read(results, nullptr));
    graph_.metric_results.push_back(
        ops::Div(results, total, ops::Maximum(results, count, ops::Const(results, 1e-12f))).name());
    for (const auto& variable : {metric.total, metric.count}) {
      WEFT_ASSIGN_OR_RETURN(Output reset,
                            variable->Assign(results, ops::Const(results, 0.0f), nullptr));
      resets.push_back(reset);
    }
  }
  graph_.reset_metrics =
      ops::NoOp(results.WithOpName("reset").WithControlDependencies(resets)).name();
  return Status::OK();
}

Status ModelGraphBuilder::BuildLearningRate() {
  Scope learning_rate = graph_.root.NewSubScope("learning_rate");
  Output value =
      ops::Placeholder(learning_rate.WithOpName("value"), DataType::kFloat, PartialShape({}));
  graph_.learning_rate_value = value.name();
  WEFT_ASSIGN_OR_RETURN(Output assign, model_.optimizer.AssignLearningRate(learning_rate, value));
  graph_.assign_learning_rate = assign.name();
  return Status::OK();
}

Status ModelGraphBuilder::BuildSyncOnReadMeans() {
  std::vector<Output> syncs;
  if (strategy_.num_replicas_in_sync() > 1) {
    Scope sync = graph_.root.NewSubScope("sync_on_read_means");
    for (const auto& variable : graph_.variables) {
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
    graph_.sync_on_read_means =
        ops::NoOp(graph_.root.WithOpName("sync_on_read_means").WithControlDependencies(syncs))
            .name();
  }
  return Status::OK();
}

Status ModelGraphBuilder::BuildInferencePart() {
  return BuildPart(
      /*training=*/false, /*with_labels=*/false, &graph_.inference,
      [](distribute::ReplicaContext&, const Scope&, const Output&, const Output&,
         const Output& predictions, LayerCallContext&, std::vector<Output>* outputs) {
        *outputs = {predictions};
        return Status::OK();
      });
}

}  // namespace weft::train
