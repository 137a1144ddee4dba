// ModelGraphBuilder: the steps that build a Model's graph (model_graph.h) through its strategy, one
// part at a time: the metric totals, the training part, the evaluation part, the metric results,
// the learning rate, the sync-on-read means and the inference part. Model::EnsureBuilt decides
// which parts are missing and calls the steps in that order, inside Strategy::Scope; each step
// adds nodes under the graph's root scope and records the names Fit, Evaluate and Predict use.
// The builder borrows everything it is given and lives for one EnsureBuilt call. Private to
// model*.cc; not thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/distribute/strategy.h"
#include "weft/train/losses.h"
#include "weft/train/metrics.h"
#include "weft/train/model.h"
#include "weft/train/model_graph.h"
#include "weft/train/optimizer.h"

namespace weft::train {

// The shape of a batch of `example`s: `example` with a leading batch dimension of any size.
PartialShape WithBatch(const PartialShape& example);

class ModelGraphBuilder {
 public:
  // What the builder reads from the model (its Compile arguments and its layers); borrowed.
  struct ModelParts {
    const std::string& name;
    const Model::Signature& signature;
    const Model::MultiCallFn& call;
    // Per output: its loss, its weight in the total and its metrics.
    const std::vector<Loss>& losses;
    const std::vector<double>& loss_weights;
    Optimizer& optimizer;
    const std::vector<std::vector<Metric>>& metrics;
    // The seed the layers derive theirs from (CompileOptions::seed or the global seed).
    std::optional<int64_t> seed = std::nullopt;
    // The type the layers' matrix products run in (CompileOptions::dtype_policy).
    DataType compute_dtype = DataType::kFloat;
  };

  // Builds into `graph` for inputs of `inputs` and, in the training and evaluation parts, labels
  // shaped like `labels` (the first batch's, one per output; null when only inference is built).
  ModelGraphBuilder(const distribute::Strategy& strategy, ModelParts model, ModelGraph& graph,
                    const std::vector<InputSpec>& inputs, const std::vector<Tensor>* labels);
  ModelGraphBuilder(const ModelGraphBuilder&) = delete;
  ModelGraphBuilder& operator=(const ModelGraphBuilder&) = delete;

  // The training steps, in this order (the results read the totals; the learning rate exists
  // once the training part made the optimizer's variables; the means need every variable the
  // parts made taken into graph.variables first, by Model::AdoptNewVariables).
  //
  // A sync-on-read SUM total and count per metric ("loss" first, then each output's loss when
  // there are several), one component per replica.
  Status BuildMetricTotals();
  // Per replica: the loss, the optimizer's update and the metric updates, as "train_step";
  // with `unroll` > 1 that many steps in a row, each after the previous one's update
  // (ModelGraph::unrolled_training, for CompileOptions::steps_per_execution).
  Status BuildTrainingPart(int unroll = 1);
  // The training part once more (ModelGraph::per_worker_training), its inputs and labels taken
  // from `element` (a per-worker dataset's components on the worker device) instead of fed.
  Status BuildPerWorkerTrainingPart(const std::vector<Output>& element);
  // Per replica, in inference mode: the loss and the metric updates, as "eval_step".
  Status BuildEvaluationPart();
  // The cross-replica means of the totals, and the op that resets the totals to zero.
  Status BuildMetricResults();
  // A placeholder and the op that assigns it to the optimizer's learning rate variables.
  Status BuildLearningRate();
  // With several replicas in sync: the op that sets every sync-on-read MEAN variable (moving
  // statistics) to its cross-replica mean.
  Status BuildSyncOnReadMeans();

  // Per replica, in inference mode: the predictions.
  Status BuildInferencePart();

 private:
  // A part's own outputs on one replica: what it fetches (the loss, or the predictions) and, when
  // it has one, its step (a target).
  struct PartOutputs {
    std::vector<Output> fetches;
    Output step;
  };
  // One replica's tensors of a part: placeholders (labels: none in inference) and predictions.
  struct ReplicaTensors {
    std::vector<Output> inputs, labels, predictions;
  };
  using Finish =
      std::function<Status(distribute::ReplicaContext& context, const Scope& scope,
                           const ReplicaTensors& tensors, LayerCallContext& calls, PartOutputs*)>;
  // A metric's running totals: sync-on-read SUM variables, one component per replica, and what
  // they sum: `metric` of `output`, or (metric -1) the loss of `output` (-1: the total loss).
  // Builds one part: per replica, placeholders, the model, and `finish`'s outputs and steps,
  // whose names go to `names`; `unroll` times in a row, each after the previous one's step. With
  // `element` (one replica, no unrolling), its components stand for the placeholders.
  Status BuildPart(bool training, bool with_labels, int unroll, ReplicaNames* names,
                   const Finish& finish, const std::vector<Output>* element = nullptr);
  // The training part's outputs on one replica (the loss, the update and the metric updates).
  Status FinishTrainingStep(distribute::ReplicaContext& context, const Scope& scope,
                            const ReplicaTensors& tensors, LayerCallContext& calls,
                            PartOutputs* outputs);
  // `component` with the static shape `shape` (at most its batch dimension unknown): the shape
  // a placeholder would have given the model.
  static Output WithStaticShape(const Scope& scope, const Output& component,
                                const PartialShape& shape);
  // InvalidArgument unless the call built one output per name of the signature.
  Status CheckPredictions(const std::vector<Output>& predictions) const;
  // The ops that add replica `replica`'s batch to its components of the totals; `losses` holds
  // the total loss, then each output's.
  std::vector<Output> UpdateMetrics(int replica, const Scope& scope, const ReplicaTensors& tensors,
                                    const std::vector<Output>& losses);
  // Each output's loss and, first, their weighted sum (the loss itself with one output).
  std::vector<Output> Losses(const Scope& scope, const ReplicaTensors& tensors) const;

  const distribute::Strategy& strategy_;
  ModelParts model_;
  ModelGraph& graph_;
  const std::vector<InputSpec>& inputs_;
  const std::vector<Tensor>* labels_;
  // Per output: labels [batch, ...] as the first batch's, with any batch size.
  std::vector<PartialShape> label_shapes_;
};

}  // namespace weft::train
