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
    const Model::CallFn& call;
    const Loss& loss;
    Optimizer& optimizer;
    const std::vector<Metric>& metrics;
  };

  // Builds into `graph` for inputs of `input` and, in the training and evaluation parts, labels
  // shaped like `labels` (the first batch's; null when only inference is built).
  ModelGraphBuilder(const distribute::Strategy& strategy, ModelParts model, ModelGraph& graph,
                    const InputSpec& input, const Tensor* labels);
  ModelGraphBuilder(const ModelGraphBuilder&) = delete;
  ModelGraphBuilder& operator=(const ModelGraphBuilder&) = delete;

  // The training steps, in this order (the results read the totals; the learning rate exists
  // once the training part made the optimizer's variables; the means need every variable the
  // parts made taken into graph.variables first, by Model::AdoptNewVariables).
  //
  // A sync-on-read SUM total and count per metric ("loss" first), one component per replica.
  Status BuildMetricTotals();
  // Per replica: the loss, the optimizer's update and the metric updates, as "train_step".
  Status BuildTrainingPart();
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
  // A part's own outputs on one replica: its first (the loss or the predictions) and, when it has
  // one, its step (a target).
  using Finish =
      std::function<Status(distribute::ReplicaContext& context, const Scope& scope,
                           const Output& inputs, const Output& labels, const Output& predictions,
                           LayerCallContext& calls, std::vector<Output>* outputs)>;
  // A metric's running totals: sync-on-read SUM variables, one component per replica.
  struct MetricTotals {
    std::shared_ptr<distribute::DistributedVariable> total, count;
  };

  // Builds one part: per replica, placeholders, the model, and `finish`'s outputs and steps,
  // whose names go to `names`.
  Status BuildPart(bool training, bool with_labels, ReplicaNames* names, const Finish& finish);
  // The ops that add replica `replica`'s batch to its components of the totals.
  std::vector<Output> UpdateMetrics(int replica, const Scope& scope, const Output& inputs,
                                    const Output& labels, const Output& predictions,
                                    const Output& loss);

  const distribute::Strategy& strategy_;
  ModelParts model_;
  ModelGraph& graph_;
  const InputSpec& input_;
  const Tensor* labels_;
  // Labels [batch, ...] as the first batch's, with any batch size.
  PartialShape label_shape_;
  std::vector<MetricTotals> totals_;  // made by BuildMetricTotals, in graph_.metric_names' order
};

}  // namespace weft::train
