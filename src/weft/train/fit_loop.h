// FitLoop: one Model::Fit call's epochs and batches, after the graph is built and OnTrainBegin
// ran: in the model's session step by step, or, under an asynchronous strategy (the model has a
// ClusterCoordinator), scheduled on the workers with a few steps in flight, whose results reach
// the callbacks in the order the steps were scheduled. Internal to train/; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/arena.h>

#include "weft/data/dataset.h"
#include "weft/distribute/coordinator/cluster_coordinator.h"
#include "weft/distribute/coordinator/input_shard_leases.h"
#include "weft/train/model.h"

namespace weft::train {

// Gives each traced step a fresh RunMetadata on an arena whose first block stays from step to
// step: the step stats' few hundred protos and strings then cost no malloc or free each (they
// were a third of what tracing every step of W1 cost).
class TracedStepMetadata {
 public:
  TracedStepMetadata() : block_(kFirstBlockBytes), arena_(FirstBlock(block_)) {}

  // Valid until the next call.
  proto::RunMetadata* Fresh() {
    arena_.Reset();
    return google::protobuf::Arena::CreateMessage<proto::RunMetadata>(&arena_);
  }

 private:
  static constexpr size_t kFirstBlockBytes = 256 << 10;

  static google::protobuf::ArenaOptions FirstBlock(std::vector<char>& block) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block.data();
    options.initial_block_size = block.size();
    return options;
  }

  std::vector<char> block_;
  google::protobuf::Arena arena_;
};

// See the file comment. Its steps share the epoch's iterator and the batch read ahead, and every
// traced step's metadata. Borrows the model, the dataset and the options.
class FitLoop {
 public:
  // `skip`: the batches of the first epoch that a resumed run already did.
  FitLoop(Model& model, const data::Dataset& dataset, const FitOptions& options, int64_t skip)
      : model_(model), dataset_(dataset), options_(options), skip_(skip) {
    trace_options_.set_trace_level(proto::RunOptions::FULL_TRACE);
  }

  // Each epoch's logs, from the model's position on, until the epochs, max_steps or a callback's
  // StopTraining end it.
  StatusOr<History> Run();

 private:
  // Whether the global step, counting the steps in flight, reached options.max_steps.
  bool Capped() const {
    return options_.max_steps >= 0 &&
           model_.position_.global_step + in_flight_steps_ >= options_.max_steps;
  }
  // Begins `epoch`: its iterator, OnEpochBegin, the metrics' reset, the batches to skip and the
  // first batch read ahead.
  Status StartEpoch(int epoch);
  // The batches of the next execution: the one read ahead and up to steps_per_execution - 1 more,
  // as far as the epoch, steps_per_epoch and max_steps allow; then reads the next one ahead.
  Status TakeExecution(int epoch, std::vector<data::Element>* batches);
  // Whether `batches` make up a whole execution of the unrolled training graph.
  bool Unrolled(size_t batches) const;
  // Trains on the next execution's batches (all at once when they make up a whole one and none
  // is traced, else one by one) and calls the callbacks with each step's logs.
  Status RunStep(int epoch);
  // Under an asynchronous strategy (the model has a coordinator): schedules the next execution's
  // batches on a free worker (one function for a whole execution), and finishes the oldest
  // functions beyond the window.
  Status ScheduleStep(int epoch);
  // Waits for the oldest function in flight and calls the callbacks with its steps' logs, in the
  // order they were scheduled. A step's error is returned once every other step has ended.
  Status FinishOldestStep(int epoch);
  // Counts one finished step of `epoch` (the last of its execution or not) and calls the
  // callbacks with its logs (and its trace, with `metadata`).
  Status FinishStep(int epoch, int64_t examples, double seconds, double loss,
                    bool last_of_execution, const proto::RunMetadata* metadata, int64_t start_nanos,
                    int64_t end_nanos);
  // Step `step`'s loss over the replicas, from a run's fetches (each replica's `steps` losses).
  static double MeanLoss(const std::vector<Tensor>& losses, size_t steps, size_t step);
  // The logs of a step and the model's position after it, for the callbacks.
  Logs StepLogs(int64_t batch, int64_t examples, double seconds, double loss) const;
  struct InFlightStep {
    distribute::RemoteValue value;
    std::vector<int64_t> examples;  // per step of the function
    std::chrono::steady_clock::time_point scheduled;
    std::string where;  // the epoch, steps and batches it trains, for its error
  };
  // Under exactly-once input: runs `step` on `worker` under a lease of input shard `shard`, which
  // is consumed when the step is committed and returned to the pool when it fails.
  static distribute::FunctionResult RunLeased(const Model& model, const Model::BatchStep& step,
                                              distribute::InputShardLeases& leases, int64_t shard,
                                              int worker);
  // Under exactly-once input, after the epoch's steps all finished: every one was committed
  // (Internal otherwise); counts the leases reissued.
  Status CheckEveryShardConsumed(int epoch);
  // The epoch's logs (the metrics, and the validation data's), given to OnEpochEnd.
  StatusOr<Logs> EndEpoch(int epoch);

  Model& model_;
  const data::Dataset& dataset_;
  const FitOptions& options_;
  int64_t skip_;
  std::unique_ptr<data::Iterator> iterator_;
  // One batch ahead, so that the step that ends the epoch knows it does (its position is then the
  // next epoch's start).
  data::Element next_;
  bool end_ = false;
  int64_t in_epoch_ = 0;  // batches of the current epoch done, skipped ones included
  // Under an asynchronous strategy: the functions scheduled and not yet finished, oldest first,
  // and the steps they hold.
  std::deque<InFlightStep> in_flight_;
  // Under exactly-once input: the epoch's input shards, one per scheduled function (shared with
  // the functions, which may outlive an epoch that failed).
  std::shared_ptr<distribute::InputShardLeases> leases_;
  int64_t in_flight_steps_ = 0;
  // The batches of the epoch finished (in_epoch_ counts those taken).
  int64_t finished_in_epoch_ = 0;
  std::chrono::steady_clock::time_point last_finished_{};
  // How long the current execution's steps each waited for their batch (the logs' input_seconds).
  double input_seconds_ = 0;
  std::vector<Tensor> outputs_;
  proto::RunOptions trace_options_;
  TracedStepMetadata traced_metadata_;
};

}  // namespace weft::train
