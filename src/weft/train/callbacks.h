// Callbacks: code Model::Fit calls at the start and end of training, of each epoch and after each
// batch, after the reference's Keras callbacks: a progress bar for a terminal, a JSON-lines
// logger, a learning-rate schedule, early stopping and checkpoints (with the callbacks' state, so
// that a resumed run goes on as the uninterrupted one would). A callback's error ends Fit with it.
// Not thread-safe: Fit calls them from its own thread, in order.
#pragma once

#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "weft/train/model.h"

namespace weft::train {

class Callback {
 public:
  virtual ~Callback() = default;
  virtual Status OnTrainBegin(Model& /*model*/) { return Status::OK(); }
  // `epoch` counts from 0.
  virtual Status OnEpochBegin(Model& /*model*/, int /*epoch*/) { return Status::OK(); }
  // After each training batch: its "loss", "examples" and "seconds" (the step's wall time),
  // "input_seconds" (how long the step waited for its batch), "batch" (in the epoch, from 1),
  // "steps" (the epoch's, -1 while unknown), "step" (the global step,
  // Model::position().global_step) and "epochs" (Fit's).
  virtual Status OnTrainBatchEnd(Model& /*model*/, const Logs& /*logs*/) { return Status::OK(); }
  // Asked before each training batch whether to trace it (every op of every device: RunOptions
  // FULL_TRACE). `step` is the global step the batch will make. When any callback asks, each one
  // gets the step's statistics and its start and end (StepStatsNowNanos) before OnTrainBatchEnd.
  virtual bool TraceTrainBatch(int64_t /*step*/) { return false; }
  virtual Status OnTrainBatchTraced(Model& /*model*/, const proto::StepStats& /*stats*/,
                                    int64_t /*start_nanos*/, int64_t /*end_nanos*/) {
    return Status::OK();
  }
  // The epoch's logs (Fit's History entry).
  virtual Status OnEpochEnd(Model& /*model*/, int /*epoch*/, const Logs& /*logs*/) {
    return Status::OK();
  }
  // Once every callback's OnEpochEnd for the epoch ran: ModelCheckpoint saves here, so that its
  // checkpoint holds the state the other callbacks reached in the epoch, whatever their order.
  virtual Status AfterEpochEnd(Model& /*model*/, int /*epoch*/, const Logs& /*logs*/) {
    return Status::OK();
  }
  virtual Status OnTrainEnd(Model& /*model*/) { return Status::OK(); }

  // What this callback keeps across a stopped and resumed run (ModelCheckpoint saves it with
  // each checkpoint): int64 values (a double by its bits) under names unique to it
  // ("early_stopping/val_loss/best"), the same names at every call.
  virtual CallbackState State() const { return {}; }
  // When Fit resumes a stopped run, after every OnTrainBegin: the state its checkpoint held, every
  // callback's (a callback takes its own names; one missing, from a run without this callback,
  // leaves it as OnTrainBegin set it).
  virtual Status RestoreState(const CallbackState& /*state*/) { return Status::OK(); }
};

// One line per epoch redrawn in place after each batch ("Epoch 1/3  120/469 [=====>     ]  loss
// 0.4123  52000 examples/s"; the batch count alone while the epoch's length is unknown), then the
// epoch's logs. Writes to `out` (stderr by default); redraws in place only on a terminal, else
// prints the epoch lines alone.
class ProgressBar final : public Callback {
 public:
  explicit ProgressBar(FILE* out = stderr);
  Status OnEpochBegin(Model& model, int epoch) override;
  Status OnTrainBatchEnd(Model& model, const Logs& logs) override;
  Status OnEpochEnd(Model& model, int epoch, const Logs& logs) override;

 private:
  FILE* out_;
  bool terminal_;
  int epochs_ = 0;
  int epoch_ = 0;
  double seconds_ = 0;
  int64_t examples_ = 0;
};

// Appends one JSON object per epoch ({"epoch": 1, "loss": ..., ...}) to `path`; with
// every_batch, also one per batch (the batch's logs: {"batch": 12, "loss": ..., "step": ...}).
// Opening or writing the file fails Fit naming it.
class JsonLinesLogger final : public Callback {
 public:
  explicit JsonLinesLogger(std::string path, bool every_batch = false);
  ~JsonLinesLogger() override;
  Status OnTrainBegin(Model& model) override;
  Status OnTrainBatchEnd(Model& model, const Logs& logs) override;
  Status OnEpochEnd(Model& model, int epoch, const Logs& logs) override;
  Status OnTrainEnd(Model& model) override;

 private:
  Status Write(const std::string& line);

  std::string path_;
  bool every_batch_;
  FILE* file_ = nullptr;
};

// Sets the learning rate at the start of each epoch to schedule(epoch, current rate).
class LearningRateScheduler final : public Callback {
 public:
  using Schedule = std::function<double(int epoch, double learning_rate)>;
  explicit LearningRateScheduler(Schedule schedule) : schedule_(std::move(schedule)) {}
  Status OnEpochBegin(Model& model, int epoch) override;

 private:
  Schedule schedule_;
};

// Stops training when `monitor` (e.g. "val_loss"; a "loss" or "accuracy"-like name is compared
// as the reference does: lower is better unless the name holds "acc") has not improved by more
// than min_delta for `patience` epochs. A monitor missing from the logs fails Fit, naming it and
// the logs there are. Its best value and the epochs waited since are its State, so a run resumed
// by ModelCheckpoint stops when the uninterrupted one would.
class EarlyStopping final : public Callback {
 public:
  explicit EarlyStopping(std::string monitor = "val_loss", int patience = 0, double min_delta = 0);
  Status OnTrainBegin(Model& model) override;
  Status OnEpochEnd(Model& model, int epoch, const Logs& logs) override;
  CallbackState State() const override;
  Status RestoreState(const CallbackState& state) override;
  // The epoch (from 0) training stopped after; -1 while it has not.
  int stopped_epoch() const { return stopped_epoch_; }
  // The best value seen, and the epochs since it improved.
  double best() const { return best_; }
  int wait() const { return waited_; }

 private:
  std::string monitor_;
  int patience_;
  double min_delta_;
  bool higher_is_better_;
  double best_ = 0;
  bool has_best_ = false;
  int waited_ = 0;
  int stopped_epoch_ = -1;
};

// Saves the model's state to numbered checkpoints in `directory` (CheckpointManager's layout:
// "ckpt-<step>/", "checkpoint.json"): every variable the model trains with (weights, optimizer
// slots, moving statistics, the metrics' totals), where training stands (global step, epoch,
// batch) and the other callbacks' State (EarlyStopping's best value and wait), every
// save_every_steps global steps (0: after each epoch) and at the end of Fit. An epoch's last save
// is made once every callback's OnEpochEnd ran. On a fresh model's first Fit it restores the
// latest checkpoint there and makes Fit continue where that run stopped, like the reference's
// BackupAndRestore, and says so (ModelCheckpointOptions::report, else the log: which checkpoint,
// which step): a job killed at any moment and started again with the same code ends as an
// uninterrupted one would. The checkpoint restores into any strategy and replica count; under
// MultiWorkerMirroredStrategy every worker restores and only the chief writes.
struct ModelCheckpointOptions {
  int64_t save_every_steps = 0;  // 0: after each epoch
  int keep = 3;                  // the newest checkpoints kept
  bool async = false;            // written in the background while training goes on
  std::function<void(const std::string&)> report = nullptr;  // told of each save and resume
  // Saves only at the end of an epoch whose `monitor` (a log name) improved on the best so far,
  // as the reference's save_best_only (needs save_every_steps 0; nothing is saved at the end of
  // Fit). `mode` "min": lower is better, "max": higher, "auto": higher when the name holds "acc".
  // The best value is saved with each checkpoint, so a resumed run compares with the whole run's.
  bool save_best_only = false;
  std::string monitor = "val_loss";
  std::string mode = "auto";
  // Whether a fresh model's first Fit resumes from the directory's latest checkpoint (false:
  // only saves, as the reference's ModelCheckpoint).
  bool resume = true;
};

class ModelCheckpoint final : public Callback {
 public:
  explicit ModelCheckpoint(std::string directory, ModelCheckpointOptions options = {});
  Status OnTrainBegin(Model& model) override;
  Status OnTrainBatchEnd(Model& model, const Logs& logs) override;
  Status AfterEpochEnd(Model& model, int epoch, const Logs& logs) override;
  Status OnTrainEnd(Model& model) override;
  CallbackState State() const override;
  Status RestoreState(const CallbackState& state) override;
  // Saves the model's state now, synchronously, whichever worker this is (an elastic job's
  // survivor about to wait below --min-workers). Needs a Fit begun with this callback.
  Status SaveNow(Model& model);

  // Saves made, failed saves (training goes on after those) and the longest time a save held
  // training up; zero before the first Fit.
  int64_t saves() const { return checkpoints_ ? checkpoints_->saves() : 0; }
  int64_t failed_saves() const { return checkpoints_ ? checkpoints_->failed_saves() : 0; }
  double max_stall_seconds() const { return checkpoints_ ? checkpoints_->max_stall_seconds() : 0; }
  // The global step of the checkpoint the first Fit resumed from; -1 when it started afresh.
  int64_t resumed_from_step() const { return resumed_from_step_; }

 private:
  // Saves now (unless this step is saved), with every callback's state.
  Status Save(Model& model, bool final);

  std::string directory_;
  ModelCheckpointOptions options_;
  const Model* model_ = nullptr;  // the model the checkpoint ops were built into
  std::unique_ptr<TrainCheckpoints> checkpoints_;
  int64_t resumed_from_step_ = -1;
  bool save_after_epoch_ = false;  // a save fell due at an epoch's last step
  // save_best_only: the best value of the monitor so far.
  bool higher_is_better_ = false;
  double best_ = 0;
  bool has_best_ = false;
};

}  // namespace weft::train
