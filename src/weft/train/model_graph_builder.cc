#include "weft/train/model_graph_builder.h"

#include <algorithm>
#include <utility>

#include "weft/core/str_util.h"

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
                                     ModelGraph& graph, const std::vector<InputSpec>& inputs,
                                     const std::vector<Tensor>* labels)
    : strategy_(strategy), model_(model), graph_(graph), inputs_(inputs), labels_(labels) {
  if (labels != nullptr) {
    for (const Tensor& label : *labels) {
      std::vector<int64_t> dims = {-1};
      for (int i = 1; i < label.dims(); ++i) dims.push_back(label.dim_size(i));
      label_shapes_.emplace_back(std::move(dims));
    }
  }
}

Output ModelGraphBuilder::WithStaticShape(const Scope& scope, const Output& component,
                                          const PartialShape& shape) {
  if (!shape.rank_known() ||
      std::count(shape.dims().begin(), shape.dims().end(), int64_t{-1}) > 1) {
    return ops::Identity(scope, component);
  }
  return ops::Reshape(scope, component, ops::Const(scope, Tensor::FromVector(shape.dims())));
}

Status ModelGraphBuilder::BuildPart(bool training, bool with_labels, int unroll,
                                    ReplicaNames* names, const Finish& finish,
                                    const std::vector<Output>* element) {
  if (element != nullptr && (unroll != 1 || strategy_.num_local_replicas() != 1)) {
    return Internal("a part fed by a dataset's element has one replica and one step");
  }
  const int replicas = strategy_.num_local_replicas();
  const Model::Signature& signature = model_.signature;
  names->inputs.assign(replicas, {});
  names->labels.assign(with_labels ? replicas : 0, {});
  names->outputs.assign(replicas, {});
  names->steps.assign(replicas, "");
  const std::string prefix = element != nullptr ? "per_worker_" : training ? "" : "eval_";
  auto replica_fn = [&](distribute::ReplicaContext& context,
                        const Scope& replica_scope) -> StatusOr<std::vector<Output>> {
    const int r = context.replica_id();
    std::vector<Output> made;
    Output previous_step;
    for (int k = 0; k < unroll; ++k) {
      // Step k + 1 starts once step k's update is done: its reads see the variables it wrote.
      const Scope scope =
          k == 0 ? replica_scope : replica_scope.WithControlDependencies({previous_step});
      const std::string suffix = k == 0 ? "" : StrCat("_", k);
      // Feeds wait for nothing: a fed value that waited for the previous step would travel to
      // its replica only once that step is done.
      const Scope& feed = replica_scope;
      ReplicaTensors tensors;
      for (size_t i = 0; i < signature.inputs.size(); ++i) {
        const std::string name = prefix + signature.inputs[i] + suffix;
        if (element != nullptr) {
          tensors.inputs.push_back(
              WithStaticShape(feed.WithOpName(name), (*element)[i], WithBatch(inputs_[i].shape)));
          continue;
        }
        tensors.inputs.push_back(
            ops::Placeholder(feed.WithOpName(name), inputs_[i].dtype, WithBatch(inputs_[i].shape)));
        names->inputs[r].push_back(tensors.inputs.back().name());
      }
      for (size_t o = 0; with_labels && o < signature.outputs.size(); ++o) {
        const std::string label =
            prefix + (signature.outputs.size() == 1 ? "labels" : signature.outputs[o] + "_labels") +
            suffix;
        if (element != nullptr) {
          tensors.labels.push_back(WithStaticShape(
              feed.WithOpName(label), (*element)[signature.inputs.size() + o], label_shapes_[o]));
          continue;
        }
        tensors.labels.push_back(
            ops::Placeholder(feed.WithOpName(label), (*labels_)[o].dtype(), label_shapes_[o]));
        names->labels[r].push_back(tensors.labels.back().name());
      }
      LayerCallContext calls(training, {.seed = model_.seed,
                                        .names = &graph_.layer_names,
                                        .compute_dtype = model_.compute_dtype});
      tensors.predictions = model_.call(scope, tensors.inputs);
      WEFT_RETURN_IF_ERROR(scope.status());
      WEFT_RETURN_IF_ERROR(CheckPredictions(tensors.predictions));
      if (r == 0 && graph_.calls.empty()) graph_.calls = UniqueCalls(calls.calls());
      PartOutputs outputs;
      WEFT_RETURN_IF_ERROR(finish(context, scope, tensors, calls, &outputs));
      WEFT_RETURN_IF_ERROR(scope.status());
      for (const Output& fetch : outputs.fetches) names->outputs[r].push_back(fetch.name());
      made.insert(made.end(), outputs.fetches.begin(), outputs.fetches.end());
      previous_step = outputs.step;
      if (!previous_step && k + 1 < unroll) {
        return Internal("a part unrolled ", unroll, " times has no step to order them by");
      }
    }
    if (previous_step) {
      names->steps[r] = previous_step.name();
      made.push_back(previous_step);
    }
    return made;
  };
  return strategy_.Run(graph_.root, replica_fn).status();
}

Status ModelGraphBuilder::CheckPredictions(const std::vector<Output>& predictions) const {
  const Model::Signature& signature = model_.signature;
  if (predictions.size() != signature.outputs.size()) {
    return InvalidArgument("model '", model_.name, "' built ", predictions.size(),
                           " outputs, but its signature names ", signature.outputs.size(), " (",
                           StrJoin(signature.outputs, ", "), ")");
  }
  for (size_t o = 0; o < predictions.size(); ++o) {
    if (!predictions[o]) {
      return InvalidArgument("model '", model_.name, "' built no output '", signature.outputs[o],
                             "'");
    }
  }
  return Status::OK();
}

Status ModelGraphBuilder::BuildMetricTotals() {
  const std::vector<std::string>& outputs = model_.signature.outputs;
  std::vector<MetricTotals> wanted = {MetricTotals{}};
  graph_.metric_names = {"loss"};
  // With one output its loss is the total; with several each is logged as "<output>_loss".
  for (size_t o = 0; outputs.size() > 1 && o < outputs.size(); ++o) {
    graph_.metric_names.push_back(outputs[o] + "_loss");
    wanted.push_back({nullptr, nullptr, static_cast<int>(o), -1});
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    for (size_t m = 0; m < model_.metrics[o].size(); ++m) {
      const std::string& metric = model_.metrics[o][m].name();
      graph_.metric_names.push_back(outputs.size() > 1 ? outputs[o] + "_" + metric : metric);
      wanted.push_back({nullptr, nullptr, static_cast<int>(o), static_cast<int>(m)});
    }
  }
  Scope metrics_scope = graph_.root.NewSubScope("metrics");
  for (size_t i = 0; i < wanted.size(); ++i) {
    MetricTotals& made = wanted[i];
    const Scope metric_scope = metrics_scope.NewSubScope(graph_.metric_names[i]);
    for (auto [name, slot] : {std::pair{"total", &made.total}, std::pair{"count", &made.count}}) {
      WEFT_ASSIGN_OR_RETURN(
          *slot, strategy_.CreateVariable(metric_scope, name, TensorShape(), DataType::kFloat,
                                          Initializer::Zeros(), VariableSynchronization::kOnRead,
                                          VariableAggregation::kSum));
      graph_.pending_initializers.push_back((*slot)->initializer());
      graph_.variables.push_back(*slot);
    }
    graph_.metric_totals.push_back(std::move(made));
  }
  return Status::OK();
}

std::vector<Output> ModelGraphBuilder::UpdateMetrics(int replica, const Scope& scope,
                                                     const ReplicaTensors& tensors,
                                                     const std::vector<Output>& losses) {
  Scope update = scope.NewSubScope("update_metrics");
  // This replica's examples, as a float scalar.
  Output batch = ops::Cast(
      update,
      ops::Sum(update, ops::Slice(update, ops::Shape(update, tensors.inputs[0]), {0}, {1}), 0),
      DataType::kFloat);
  std::vector<Output> updates;
  for (const MetricTotals& totals : graph_.metric_totals) {
    Output total, count;
    if (totals.metric < 0) {
      total = ops::Mul(update, losses[totals.output + 1], batch);
      count = batch;
    } else {
      const Metric& metric = model_.metrics[totals.output][totals.metric];
      Output values =
          metric(update, tensors.labels[totals.output], tensors.predictions[totals.output]);
      total = ops::Sum(update, values, 0);
      count = ops::Cast(update, ops::Size(update, values), DataType::kFloat);
    }
    updates.push_back(totals.total->component(replica).AssignAdd(update, total));
    updates.push_back(totals.count->component(replica).AssignAdd(update, count));
  }
  return updates;
}

std::vector<Output> ModelGraphBuilder::Losses(const Scope& scope,
                                              const ReplicaTensors& tensors) const {
  std::vector<Output> losses = {Output()};
  for (size_t o = 0; o < tensors.predictions.size(); ++o) {
    losses.push_back(model_.losses[o](scope, tensors.labels[o], tensors.predictions[o]));
  }
  if (losses.size() == 2 && model_.loss_weights[0] == 1.0) {
    losses[0] = losses[1];
    return losses;
  }
  Scope total = scope.NewSubScope("total_loss");
  std::vector<Output> weighted;
  for (size_t o = 0; o + 1 < losses.size(); ++o) {
    const float weight = static_cast<float>(model_.loss_weights[o]);
    weighted.push_back(weight == 1.0f ? losses[o + 1]
                                      : ops::Mul(total, losses[o + 1], ops::Const(total, weight)));
  }
  losses[0] = weighted.size() == 1 ? weighted[0] : ops::AddN(total, weighted);
  return losses;
}

Status ModelGraphBuilder::FinishTrainingStep(distribute::ReplicaContext& context,
                                             const Scope& scope, const ReplicaTensors& tensors,
                                             LayerCallContext& calls, PartOutputs* outputs) {
  std::vector<Output> losses = Losses(scope, tensors);
  WEFT_RETURN_IF_ERROR(scope.status());
  WEFT_ASSIGN_OR_RETURN(
      Output train_op,
      model_.optimizer.Minimize(
          scope, losses[0], TrainableIn(calls.calls(), graph_.root.graph(), context.replica_id()),
          &context));
  std::vector<Output> step = {train_op};
  step.insert(step.end(), calls.updates().begin(), calls.updates().end());
  std::vector<Output> metric_updates = UpdateMetrics(context.replica_id(), scope, tensors, losses);
  step.insert(step.end(), metric_updates.begin(), metric_updates.end());
  outputs->fetches = {losses[0]};
  outputs->step = ops::NoOp(scope.WithOpName("train_step").WithControlDependencies(step));
  return Status::OK();
}

Status ModelGraphBuilder::BuildTrainingPart(int unroll) {
  return BuildPart(
      /*training=*/true, /*with_labels=*/true, unroll,
      unroll == 1 ? &graph_.training : &graph_.unrolled_training,
      [&](distribute::ReplicaContext& context, const Scope& scope, const ReplicaTensors& tensors,
          LayerCallContext& calls, PartOutputs* outputs) {
        return FinishTrainingStep(context, scope, tensors, calls, outputs);
      });
}

Status ModelGraphBuilder::BuildPerWorkerTrainingPart(const std::vector<Output>& element) {
  if (element.size() != model_.signature.inputs.size() + model_.signature.outputs.size()) {
    return InvalidArgument("the per-worker dataset's elements have ", element.size(),
                           " components; model '", model_.name, "' takes ",
                           model_.signature.inputs.size(), " inputs and ",
                           model_.signature.outputs.size(), " labels");
  }
  return BuildPart(
      /*training=*/true, /*with_labels=*/true, /*unroll=*/1, &graph_.per_worker_training,
      [&](distribute::ReplicaContext& context, const Scope& scope, const ReplicaTensors& tensors,
          LayerCallContext& calls, PartOutputs* outputs) {
        return FinishTrainingStep(context, scope, tensors, calls, outputs);
      },
      &element);
}

Status ModelGraphBuilder::BuildEvaluationPart() {
  return BuildPart(
      /*training=*/false, /*with_labels=*/true, /*unroll=*/1, &graph_.evaluation,
      [&](distribute::ReplicaContext& context, const Scope& scope, const ReplicaTensors& tensors,
          LayerCallContext&, PartOutputs* outputs) -> Status {
        std::vector<Output> losses = Losses(scope, tensors);
        std::vector<Output> metric_updates =
            UpdateMetrics(context.replica_id(), scope, tensors, losses);
        outputs->fetches = {losses[0]};
        outputs->step =
            ops::NoOp(scope.WithOpName("eval_step").WithControlDependencies(metric_updates));
        return Status::OK();
      });
}

Status ModelGraphBuilder::BuildMetricResults() {
  Scope results = graph_.root.NewSubScope("metric_results");
  std::vector<Output> resets;
  for (const MetricTotals& metric : graph_.metric_totals) {
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
  // A schedule owns the rate: nothing to assign (Model::SetLearningRate refuses).
  if (model_.optimizer.schedule() != nullptr) return Status::OK();
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
      /*training=*/false, /*with_labels=*/false, /*unroll=*/1, &graph_.inference,
      [](distribute::ReplicaContext&, const Scope&, const ReplicaTensors& tensors,
         LayerCallContext&, PartOutputs* outputs) {
        outputs->fetches = tensors.predictions;
        return Status::OK();
      });
}

}  // namespace weft::train
