// The graph behind a Model: its inference, training and evaluation parts, built once per replica
// through the model's strategy, and the names of what Fit, Evaluate and Predict feed and fetch.
// Private to model*.cc; not thread-safe.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "weft/train/model.h"

namespace weft::train {

// The tensors of one part of the graph, per replica ([replica][...]).
struct ReplicaNames {
  std::vector<std::vector<std::string>> inputs;   // placeholders, one per model input
  std::vector<std::vector<std::string>> labels;   // placeholders, one per output (none: inference)
  std::vector<std::vector<std::string>> outputs;  // the predictions (inference), or the loss
  std::vector<std::string> steps;  // targets: a training step, or the metrics' updates
};

// The sync-on-read SUM total and count of a metric (per replica, summed when read): the loss's
// (output -1: the total loss; else that output's), or metric `metric` of output `output`.
struct MetricTotals {
  std::shared_ptr<distribute::DistributedVariable> total, count;
  int output = -1;
  int metric = -1;
};

struct ModelGraph {
  explicit ModelGraph(Scope root) : root(std::move(root)) {}

  Scope root;
  std::set<std::string> sent;  // nodes already in the session
  // How many of strategy->variables() this model has taken into `variables` (those made while it
  // was built), and the initializers not yet run.
  size_t adopted_variables = 0;
  std::vector<Output> pending_initializers;
  // Every variable of the model, in order of creation (see Model::distributed_variables).
  std::vector<std::shared_ptr<distribute::DistributedVariable>> variables;

  bool has_inference = false;
  std::vector<InputSpec> inputs;  // one per model input
  ReplicaNames inference;
  bool has_training = false;
  ReplicaNames training;
  // CompileOptions::steps_per_execution (K) > 1: K training steps in one run, each replica's
  // names step-major (step k's inputs, labels and loss at k * per-step count), the step the last.
  ReplicaNames unrolled_training;
  // Model::Fit of a per-worker dataset: the training part taking its inputs and labels from the
  // dataset's iterator on the worker (no inputs or labels to feed).
  ReplicaNames per_worker_training;
  ReplicaNames evaluation;
  // Unique layers of the first part built (replica 0), with their output shapes: Summary's rows.
  std::vector<LayerCallContext::Call> calls;
  // The automatic names given to the model's layers, counted per model (see LayerNames).
  LayerNames layer_names;

  // "loss", then (several outputs) each output's loss, then the metrics' (per output).
  std::vector<std::string> metric_names;
  std::vector<MetricTotals> metric_totals;  // in metric_names' order
  std::vector<std::string> metric_results;  // cross-replica total / count, in that order
  std::string reset_metrics;
  std::string learning_rate_value;  // placeholder
  std::string assign_learning_rate;
  std::string sync_on_read_means;  // "" with one replica or no such variable
};

}  // namespace weft::train
