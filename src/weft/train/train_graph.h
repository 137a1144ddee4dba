// The graph of a `weft train` run: the model and its training step, built on the plain
// single-device path or once per replica through a distribute::Strategy, plus what the loop needs
// to feed, fetch and checkpoint it. Used only by train_loop.cc; not thread-safe (it builds a
// graph).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/distribute/multi_worker_mirrored_strategy.h"
#include "weft/distribute/strategy.h"
#include "weft/train/models.h"
#include "weft/train/train_checkpoints.h"
#include "weft/train/train_loop.h"

namespace weft::train::internal {

// The graph of a training run and how to feed it: one replica per device.
struct TrainGraph {
  std::shared_ptr<Graph> owner;  // keeps the nodes the Outputs below point to
  proto::GraphDef graph;
  std::string init;
  std::vector<BuiltModel> replicas;  // replica r's placeholders, loss and metrics
  std::vector<std::string> targets;
  std::unique_ptr<distribute::Strategy> strategy;  // null on the plain single-device path
  // Multi-worker only: the chief's initial values to every replica (run once after init), and the
  // mean loss over every worker's replicas (fetched instead of the local losses).
  std::string broadcast;
  std::string global_loss;
  // `strategy` when it is a MultiWorkerMirroredStrategy; else null.
  const distribute::MultiWorkerMirroredStrategy* multi_worker = nullptr;
  // Reads of every replica's variables, for the fingerprint of the trained weights.
  std::vector<std::string> variable_reads;
  // With TrainOptions::checkpoint_dir.
  std::unique_ptr<TrainCheckpoints> checkpoints;
};

// The single-device graph: the model in the root scope, no strategy.
StatusOr<TrainGraph> BuildPlainGraph(const TrainOptions& options, const TrainCallbacks& callbacks);

// The model once per replica, one replica per device of `devices`, through the strategy the
// options name.
StatusOr<TrainGraph> BuildReplicatedGraph(const TrainOptions& options,
                                          const std::vector<std::string>& devices,
                                          const TrainCallbacks& callbacks);

}  // namespace weft::train::internal
