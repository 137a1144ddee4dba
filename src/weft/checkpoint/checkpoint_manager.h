// CheckpointManager: a directory of numbered checkpoints, as the reference's CheckpointManager.
// Each save goes to "<dir>/ckpt-<step>"; the newest `max_to_keep` are kept; a small JSON index,
// "<dir>/checkpoint.json", names the latest complete one and the ones kept. The index is written
// last (durably), after the checkpoint itself is complete, and older checkpoints are deleted only
// after it, so a process killed at any moment leaves the index naming a complete checkpoint.
// Leftovers of a killed save ("ckpt-*.tmp-*") are removed by the next save.
//
// Thread-safety: one caller at a time; SaveAsync's background completion updates the index on
// its own thread, and every later call first waits for it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "weft/checkpoint/checkpoint.h"
#include "weft/checkpoint/checkpoint_index.h"

namespace weft::checkpoint {

class CheckpointManager {
 public:
  // `checkpoint` must outlive the manager. max_to_keep < 1 keeps every checkpoint.
  CheckpointManager(Checkpoint* checkpoint, std::string directory, int max_to_keep);
  ~CheckpointManager();

  const std::string& directory() const { return directory_; }

  // The path of the newest complete checkpoint, or "" when there is none; errors as
  // ReadCheckpointIndex.
  StatusOr<std::string> LatestCheckpoint() const;

  // Saves "<dir>/ckpt-<step>", then moves the index to it and deletes what falls out of
  // max_to_keep. Creates the directory when missing. Errors name the path; the index and the
  // previous checkpoints are then untouched.
  Status Save(Session& session, int64_t step, const CheckpointValues& values);
  // As Save, written in the background (Checkpoint::SaveAsync); `done` (may be null) gets the
  // result once the index moved. WaitForSave returns that result.
  Status SaveAsync(Session& session, int64_t step, const CheckpointValues& values,
                   StatusCallback done = nullptr);
  Status WaitForSave();

  // Restores the latest checkpoint: its contents, or nullopt when the directory has none.
  StatusOr<std::optional<RestoredCheckpoint>> RestoreLatest(Session& session);

 private:
  // Before a save: creates the directory and removes leftovers of killed saves.
  Status Prepare();
  // After `name` was written: the index names it, and checkpoints beyond max_to_keep go.
  Status Commit(const std::string& name);

  Checkpoint* checkpoint_;
  std::string directory_;
  int max_to_keep_;
  bool prepared_ = false;
};

}  // namespace weft::checkpoint
