#include "weft/train/train_checkpoints.h"

#include <algorithm>
#include <chrono>

#include "weft/checkpoint/checkpoint_index.h"
#include "weft/core/logging.h"
#include "weft/core/str_util.h"
#include "weft/io/checkpoint_manifest.h"
#include "weft/io/durable_file.h"

namespace weft::train {

namespace {

// The names of `names` that the latest checkpoint of `directory` does not hold (none when it has
// no checkpoint).
StatusOr<std::vector<std::string>> MissingFromLatest(const std::string& directory,
                                                     const std::vector<std::string>& names) {
  std::vector<std::string> missing;
  if (names.empty()) return missing;
  WEFT_ASSIGN_OR_RETURN(std::optional<checkpoint::CheckpointIndex> index,
                        checkpoint::ReadCheckpointIndex(directory));
  if (!index.has_value() || index->latest.empty()) return missing;
  WEFT_ASSIGN_OR_RETURN(io::CheckpointManifest manifest,
                        io::CheckpointManifest::Read(io::JoinPath(directory, index->latest)));
  for (const std::string& name : names) {
    if (!manifest.tensors.contains(name)) missing.push_back(name);
  }
  return missing;
}

}  // namespace

StatusOr<std::unique_ptr<TrainCheckpoints>> TrainCheckpoints::Create(
    const Scope& scope, checkpoint::CheckpointObjects objects,
    const TrainCheckpointOptions& options) {
  for (const char* name : {kGlobalStepName, kEpochName, kBatchIndexName, kShuffleSeedName}) {
    objects.values.push_back(name);
  }
  objects.values.insert(objects.values.end(), options.state_names.begin(),
                        options.state_names.end());
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<checkpoint::Checkpoint> checkpoint,
                        checkpoint::Checkpoint::Create(scope, objects));
  // A run with other callbacks wrote the latest checkpoint: it restores through a checkpoint of
  // what it holds, and the callbacks whose state it lacks start afresh.
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> missing,
                        MissingFromLatest(options.directory, options.state_names));
  std::unique_ptr<checkpoint::Checkpoint> restore_older;
  if (!missing.empty()) {
    std::erase_if(objects.values, [&](const std::string& name) {
      return std::find(missing.begin(), missing.end(), name) != missing.end();
    });
    WEFT_ASSIGN_OR_RETURN(restore_older,
                          checkpoint::Checkpoint::Create(scope.NewSubScope("older"), objects));
  }
  return std::unique_ptr<TrainCheckpoints>(new TrainCheckpoints(
      std::move(checkpoint), std::move(restore_older), std::move(missing), options));
}

TrainCheckpoints::TrainCheckpoints(std::unique_ptr<checkpoint::Checkpoint> checkpoint,
                                   std::unique_ptr<checkpoint::Checkpoint> restore_older,
                                   std::vector<std::string> missing_state,
                                   const TrainCheckpointOptions& options)
    : checkpoint_(std::move(checkpoint)),
      restore_older_(std::move(restore_older)),
      missing_state_(std::move(missing_state)),
      manager_(checkpoint_.get(), options.directory, options.keep),
      options_(options) {}

StatusOr<std::optional<RestoredTraining>> TrainCheckpoints::RestoreLatest(Session& session) {
  std::optional<checkpoint::RestoredCheckpoint> restored;
  if (restore_older_ != nullptr) {
    WEFT_ASSIGN_OR_RETURN(restored, restore_older_->RestoreLatest(session, options_.directory));
  } else {
    WEFT_ASSIGN_OR_RETURN(restored, manager_.RestoreLatest(session));
  }
  if (!restored.has_value()) return std::optional<RestoredTraining>();
  RestoredTraining training;
  training.directory = restored->directory;
  TrainPosition& position = training.position;
  position.global_step = restored->values.at(kGlobalStepName);
  position.epoch = restored->values.at(kEpochName);
  position.batch_index = restored->values.at(kBatchIndexName);
  position.shuffle_seed = restored->values.at(kShuffleSeedName);
  for (const std::string& name : options_.state_names) {
    auto found = restored->values.find(name);
    if (found != restored->values.end()) training.state.insert(*found);
  }
  last_saved_step_ = position.global_step;
  Report(StrCat("resumed from checkpoint ", restored->directory, " at global step ",
                position.global_step, " (epoch ", position.epoch + 1, ", batch ",
                position.batch_index, ")"),
         /*log=*/true);
  if (!missing_state_.empty()) {
    Report(StrCat("checkpoint ", restored->directory, " holds no ", StrJoin(missing_state_, ", "),
                  " (saved by a run with other callbacks): those start afresh"),
           /*log=*/true);
  }
  return std::optional<RestoredTraining>(std::move(training));
}

StatusOr<std::optional<std::pair<std::string, int64_t>>> TrainCheckpoints::Latest() const {
  using Latest = std::optional<std::pair<std::string, int64_t>>;
  WEFT_ASSIGN_OR_RETURN(std::optional<checkpoint::CheckpointIndex> index,
                        checkpoint::ReadCheckpointIndex(options_.directory));
  if (!index.has_value() || index->latest.empty()) return Latest();
  const std::string directory = io::JoinPath(options_.directory, index->latest);
  WEFT_ASSIGN_OR_RETURN(io::CheckpointManifest manifest, io::CheckpointManifest::Read(directory));
  return Latest(std::make_pair(directory, manifest.step));
}

Status TrainCheckpoints::Prepare(Session& session) {
  if (!options_.writer || !options_.async) return Status::OK();
  return checkpoint_->PrepareSaveAsync(session);
}

void TrainCheckpoints::Report(const std::string& line, bool log) const {
  if (options_.report) {
    options_.report(line);
  } else if (log) {
    WEFT_LOG(INFO) << line;
  }
}

void TrainCheckpoints::Settle(const Status& status) {
  if (status.ok()) return;
  ++failed_saves_;
  Report(StrCat("checkpoint save failed (training goes on; the previous checkpoint is intact): ",
                status.ToString()),
         /*log=*/true);
}

Status TrainCheckpoints::AfterStep(Session& session, const TrainPosition& position, bool final,
                                   const checkpoint::CheckpointValues& state) {
  if (!options_.writer || position.global_step == last_saved_step_) return Status::OK();
  const bool due =
      options_.save_every_steps > 0 && position.global_step % options_.save_every_steps == 0;
  if (!due && !final) return Status::OK();
  return Save(session, position, final, state);
}

Status TrainCheckpoints::SaveNow(Session& session, const TrainPosition& position,
                                 const checkpoint::CheckpointValues& state) {
  if (position.global_step == last_saved_step_) return Status::OK();
  return SaveUnchecked(session, position, /*final=*/true, state);
}

Status TrainCheckpoints::Save(Session& session, const TrainPosition& position, bool final,
                              const checkpoint::CheckpointValues& state) {
  if (!options_.writer || position.global_step == last_saved_step_) return Status::OK();
  return SaveUnchecked(session, position, final, state);
}

Status TrainCheckpoints::SaveUnchecked(Session& session, const TrainPosition& position, bool final,
                                       const checkpoint::CheckpointValues& state) {
  checkpoint::CheckpointValues values = state;
  values.insert({{kGlobalStepName, position.global_step},
                 {kEpochName, position.epoch},
                 {kBatchIndexName, position.batch_index},
                 {kShuffleSeedName, position.shuffle_seed}});
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
