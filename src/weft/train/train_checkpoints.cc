#include "weft/train/train_checkpoints.h"

#include <algorithm>
#include <chrono>

#include "weft/core/str_util.h"

namespace weft::train {

StatusOr<std::unique_ptr<TrainCheckpoints>> TrainCheckpoints::Create(
    const Scope& scope, checkpoint::CheckpointObjects objects,
    const TrainCheckpointOptions& options) {
  for (const char* name : {kGlobalStepName, kEpochName, kBatchIndexName, kShuffleSeedName}) {
    objects.values.push_back(name);
  }
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<checkpoint::Checkpoint> checkpoint,
                        checkpoint::Checkpoint::Create(scope, objects));
  return std::unique_ptr<TrainCheckpoints>(new TrainCheckpoints(std::move(checkpoint), options));
}

TrainCheckpoints::TrainCheckpoints(std::unique_ptr<checkpoint::Checkpoint> checkpoint,
                                   const TrainCheckpointOptions& options)
    : checkpoint_(std::move(checkpoint)),
      manager_(checkpoint_.get(), options.directory, options.keep),
      options_(options) {}

StatusOr<std::optional<TrainPosition>> TrainCheckpoints::RestoreLatest(Session& session) {
  WEFT_ASSIGN_OR_RETURN(std::optional<checkpoint::RestoredCheckpoint> restored,
                        manager_.RestoreLatest(session));
  if (!restored.has_value()) return std::optional<TrainPosition>();
  TrainPosition position;
  position.global_step = restored->values.at(kGlobalStepName);
  position.epoch = restored->values.at(kEpochName);
  position.batch_index = restored->values.at(kBatchIndexName);
  position.shuffle_seed = restored->values.at(kShuffleSeedName);
  last_saved_step_ = position.global_step;
  Report(StrCat("resumed from checkpoint ", restored->directory, " at global step ",
                position.global_step, " (epoch ", position.epoch + 1, ", batch ",
                position.batch_index, ")"));
  return std::optional<TrainPosition>(position);
}

Status TrainCheckpoints::Prepare(Session& session) {
  if (!options_.writer || !options_.async) return Status::OK();
  return checkpoint_->PrepareSaveAsync(session);
}

void TrainCheckpoints::Report(const std::string& line) const {
  if (options_.report) options_.report(line);
}

void TrainCheckpoints::Settle(const Status& status) {
  if (status.ok()) return;
  ++failed_saves_;
  Report(StrCat("checkpoint save failed (training goes on; the previous checkpoint is intact): ",
                status.ToString()));
}

Status TrainCheckpoints::AfterStep(Session& session, const TrainPosition& position, bool final) {
  if (!options_.writer || position.global_step == last_saved_step_) return Status::OK();
  const bool due =
      options_.save_every_steps > 0 && position.global_step % options_.save_every_steps == 0;
  if (!due && !final) return Status::OK();
  return Save(session, position, final);
}

Status TrainCheckpoints::Save(Session& session, const TrainPosition& position, bool final) {
  if (!options_.writer || position.global_step == last_saved_step_) return Status::OK();
  const checkpoint::CheckpointValues values = {{kGlobalStepName, position.global_step},
                                               {kEpochName, position.epoch},
                                               {kBatchIndexName, position.batch_index},
                                               {kShuffleSeedName, position.shuffle_seed}};
  const auto start = std::chrono::steady_clock::now();
  Settle(manager_.WaitForSave());
  Status status;
  // The last save is always synchronous: the run ends only once it is on disk.
  if (options_.async && !final) {
    status = manager_.SaveAsync(session, position.global_step, values);
  } else {
    status = manager_.Save(session, position.global_step, values);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (final && !status.ok()) return status;
  Settle(status);
  // A failed save is tried again at the next one due, and at the end even at the same step.
  if (!status.ok()) return Status::OK();
  last_saved_step_ = position.global_step;
  ++saves_;
  if (!final) {
    // The last save holds no training up: only the ones between steps count as stalls.
    pending_stall_ = seconds;
    max_stall_seconds_ = std::max(max_stall_seconds_, seconds);
  }
  if (!options_.async || final) {
    Report(StrCat("saved checkpoint ", options_.directory, "/ckpt-", position.global_step, " in ",
                  seconds, " s"));
  }
  return Status::OK();
}

void TrainCheckpoints::RecordStep(double seconds) {
  if (!pending_stall_.has_value()) {
    plain_step_seconds_ += seconds;
    ++plain_steps_;
    return;
  }
  const double mean = plain_steps_ > 0 ? plain_step_seconds_ / plain_steps_ : seconds;
  max_stall_seconds_ =
      std::max(max_stall_seconds_, *pending_stall_ + std::max(0.0, seconds - mean));
  pending_stall_.reset();
}

Status TrainCheckpoints::Finish() {
  Status status = manager_.WaitForSave();
  Settle(status);
  return status;
}

}  // namespace weft::train
