// The checkpoint side of the `weft train` loop: which objects a training run saves (every variable
// and slot, the global step and the input position), restoring the latest checkpoint of
// --checkpoint-dir on start, and saving every N global steps and at the end, synchronously or in
// the background, while measuring how long each save held training up; ModelCheckpoint's too,
// with its callbacks' state saved beside the position. Not thread-safe (the loop calls it between
// steps).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/checkpoint/checkpoint.h"
#include "weft/checkpoint/checkpoint_manager.h"

namespace weft::train {

// Where a run stands: the next step to run is `global_step` + 1, the next batch is batch
// `batch_index` of epoch `epoch` of the order drawn from `shuffle_seed`.
struct TrainPosition {
  int64_t global_step = 0;
  int64_t epoch = 0;
  int64_t batch_index = 0;
  int64_t shuffle_seed = 0;
};

// The names the position is saved under beside the variables.
inline constexpr char kGlobalStepName[] = "global_step";
inline constexpr char kEpochName[] = "input/epoch";
inline constexpr char kBatchIndexName[] = "input/batch_index";
inline constexpr char kShuffleSeedName[] = "input/shuffle_seed";

struct TrainCheckpointOptions {
  std::string directory;
  int64_t save_every_steps = 0;  // 0: only at the end
  int keep = 3;
  bool async = false;
  bool writer = true;  // false on the workers of a multi-worker job other than the chief
  // Told of every save, resume and failed save, in one line each. Null: resumes and failed saves
  // go to the log (WEFT_LOG), saves nowhere.
  std::function<void(const std::string&)> report;
  // Names of further int64 values saved with every checkpoint (the callbacks' state, see
  // Callback::State): every save must give each. A checkpoint written with fewer (by a run with
  // other callbacks) still restores; the values it lacks are reported and left out.
  std::vector<std::string> state_names{};
};

// What the latest checkpoint held: where training stood, the state values of
// TrainCheckpointOptions::state_names it has, and its directory.
struct RestoredTraining {
  TrainPosition position;
  checkpoint::CheckpointValues state;
  std::string directory;
};

class TrainCheckpoints {
 public:
  // Builds the checkpoint ops of `objects` (the variables; the position values are added here)
  // into `scope`.
  static StatusOr<std::unique_ptr<TrainCheckpoints>> Create(const Scope& scope,
                                                            checkpoint::CheckpointObjects objects,
                                                            const TrainCheckpointOptions& options);

  // Restores the latest checkpoint of the directory into the session's variables: what it holds,
  // or nullopt when there is none (the caller then initializes the variables). Reports (or logs)
  // which checkpoint and which step it resumed from.
  StatusOr<std::optional<RestoredTraining>> RestoreLatest(Session& session);
  // The latest complete checkpoint of the directory and its global step; nullopt when there is
  // none. Thread-safe (it only reads files).
  StatusOr<std::optional<std::pair<std::string, int64_t>>> Latest() const;
  // Restores, from the checkpoint `directory`, only the variables saved from `tasks` (a restarted
  // parameter server's); how many. Thread-safe: it may run beside a save
  // (Checkpoint::RestoreTasks).
  StatusOr<int> RestoreTasks(Session& session, const std::string& directory,
                             const std::vector<std::string>& tasks) const {
    return checkpoint_->RestoreTasks(session, directory, tasks);
  }
  // Before the first step, once the variables hold their values: what saves need up front (the
  // snapshot memory of background saves).
  Status Prepare(Session& session);

  // After the step that reached `position`: saves when a save is due (every save_every_steps
  // global steps, or `final`), with `state` (a value for each of options.state_names). Only the
  // writer saves. A save that fails (a full disk, an unwritable directory) is reported and
  // training goes on with the previous checkpoint intact; only the final save's failure is
  // returned.
  Status AfterStep(Session& session, const TrainPosition& position, bool final,
                   const checkpoint::CheckpointValues& state = {});
  // Saves `position` now (unless it is the last one saved), as AfterStep does when a save is due.
  Status Save(Session& session, const TrainPosition& position, bool final,
              const checkpoint::CheckpointValues& state = {});
  // Saves `position` now and synchronously, in whichever process this is (an elastic job's
  // survivor about to wait below --min-workers: the writer may be the worker lost). Errors are
  // returned.
  Status SaveNow(Session& session, const TrainPosition& position,
                 const checkpoint::CheckpointValues& state = {});
  // The duration of the step after a save: a save's stall is the time its call held the loop
  // plus what the next step took beyond the mean of the steps not following a save (the final
  // save, after the last step, holds nothing up and is not counted).
  void RecordStep(double seconds);
  // Waits for a background save; its error, if any.
  Status Finish();

  int64_t saves() const { return saves_; }
  int64_t failed_saves() const { return failed_saves_; }
  double max_stall_seconds() const { return max_stall_seconds_; }

 private:
  TrainCheckpoints(std::unique_ptr<checkpoint::Checkpoint> checkpoint,
                   std::unique_ptr<checkpoint::Checkpoint> restore_older,
                   std::vector<std::string> missing_state, const TrainCheckpointOptions& options);
  // Tells options.report of `line`, or, when there is none and `log`, the log.
  void Report(const std::string& line, bool log = false) const;
  // Save and SaveNow, past their checks.
  Status SaveUnchecked(Session& session, const TrainPosition& position, bool final,
                       const checkpoint::CheckpointValues& state);
  // A background save's result, once it is known: reported, counted.
  void Settle(const Status& status);

  std::unique_ptr<checkpoint::Checkpoint> checkpoint_;
  // When the latest checkpoint lacks some state values: a checkpoint of everything else, which
  // restores it (null otherwise), and the names it lacks.
  std::unique_ptr<checkpoint::Checkpoint> restore_older_;
  std::vector<std::string> missing_state_;
  checkpoint::CheckpointManager manager_;
  TrainCheckpointOptions options_;
  int64_t last_saved_step_ = -1;
  int64_t saves_ = 0;
  int64_t failed_saves_ = 0;
  double max_stall_seconds_ = 0;
  std::optional<double> pending_stall_;  // the last save's call, until the next step is measured
  double plain_step_seconds_ = 0;        // sum and count of steps not following a save
  int64_t plain_steps_ = 0;
};

}  // namespace weft::train
