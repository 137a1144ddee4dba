// Checkpoint: saves a model's state to a directory in Weft's open checkpoint format (safetensors
// shards plus a JSON manifest; see docs/checkpoints.md) and restores it, through ops that run on
// the devices holding the variables (SaveV2 / RestoreV2), so no variable passes through the
// client. Build it into the graph before the graph goes to the session; then Save / SaveAsync /
// Restore against that session.
//
//   CheckpointObjects objects;
//   objects.variables = model.variables;                 // plain variables
//   objects.distributed_variables = strategy.variables(); // or a strategy's
//   objects.values = {"global_step"};                    // int64 scalars the client owns
//   auto checkpoint = Checkpoint::Create(root, objects).value();
//   ... session->Create(root.ToGraphDef()) ...
//   checkpoint->Save(*session, "/ckpt/ckpt-100", 100, {{"global_step", 100}});
//   StatusOr<RestoredCheckpoint> restored = checkpoint->Restore(*session, "/ckpt/ckpt-100");
//
// Semantics follow the reference: tensors are named like the variables ("dense1/kernel",
// "dense1/kernel/Momentum"); a mirrored variable is saved once, a sync-on-read variable saved
// aggregated by its aggregation, and on restore every component gets the value (a SUM variable's
// components 1/n of it each), so a checkpoint restores into any strategy and replica count of the
// same model. The tensors of variables on different tasks go to one shard per task; mirrored
// variables are spread over the tasks that hold their components.
//
// Crash safety: Save writes into "<directory>.tmp-<pid>-<n>", each shard durably (temporary name,
// fsync, rename, directory fsync), then the manifest the same way, then renames the whole
// directory into place and fsyncs its parent. A process killed at any moment leaves `directory`
// either as it was or complete.
//
// Thread-safety: one Save / SaveAsync / Restore at a time per Checkpoint (SaveAsync's background
// write excepted, which runs alongside training steps of the same session; a later Save or
// SaveAsync first waits for it). The session must outlive any save in flight (WaitForSave).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/distribute/distributed_variable.h"
#include "weft/graph/builder/ops.h"
#include "weft/graph/builder/variable.h"
#include "weft/io/checkpoint_row_copies.h"
#include "weft/runtime/session.h"

namespace weft::checkpoint {

// The client's own int64 state saved beside the variables (the global step, the input position),
// by name.
using CheckpointValues = std::map<std::string, int64_t>;

struct CheckpointObjects {
  std::vector<Variable> variables;  // plain variables, saved under their names
  std::vector<std::shared_ptr<distribute::DistributedVariable>> distributed_variables;
  std::vector<std::string> values;  // names of CheckpointValues every save must give
  int replicas = 1;                 // written to the manifest
};

struct RestoredCheckpoint {
  std::string directory;  // the checkpoint restored
  int64_t step = 0;
  int replicas = 1;  // of the run that saved it
  CheckpointValues values;
};

class Checkpoint {
 public:
  // Adds the save, snapshot and restore ops to `scope`'s graph (under "save/" and "restore/").
  // InvalidArgument for two objects of one name, a name that is also a value's, or a scope error.
  static StatusOr<std::unique_ptr<Checkpoint>> Create(const Scope& scope,
                                                      const CheckpointObjects& objects);
  // Waits for a save in flight.
  ~Checkpoint();
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  // Writes a complete checkpoint of step `step` to `directory` (replacing one already there).
  // `values` must hold every name of CheckpointObjects::values. Errors name the path; after one,
  // `directory` is as it was.
  Status Save(Session& session, const std::string& directory, int64_t step,
              const CheckpointValues& values);
  // Snapshots the variables now, in one short step that only takes a reference to each value,
  // and returns; a background thread then copies the values into snapshot variables of their own
  // (while the next training step runs its forward pass; an update that comes first copies its
  // variable itself, so the snapshot always holds this step's values), writes the checkpoint as
  // Save does, in paced pieces, and calls `done` with the result. What `done` returns is the
  // save's final result (WaitForSave's), so it may add work of its own, such as moving an index.
  // The snapshot variables live as long as the session: saving in the background holds a second
  // copy of the model. Waits first for the previous SaveAsync; an error of the snapshot itself is
  // returned and `done` not called.
  Status SaveAsync(Session& session, const std::string& directory, int64_t step,
                   const CheckpointValues& values, std::function<Status(const Status&)> done);
  // Allocates SaveAsync's snapshot variables and builds its snapshot step, so that the first save
  // does neither inside training; run it once after the variables are initialized or restored.
  Status PrepareSaveAsync(Session& session);
  // Waits for the SaveAsync in flight, if any; returns its result (OK when none).
  Status WaitForSave();

  // Restores every object from the checkpoint in `directory`; returns its step and values. A
  // missing tensor, a dtype or shape that differs from the model, a truncated or corrupt file
  // fail with the file and the tensor named, before any variable changes when the manifest shows
  // it (later checks, the data's CRCs, may leave some variables restored and others not: restore
  // again or start over).
  StatusOr<RestoredCheckpoint> Restore(Session& session, const std::string& directory);
  // Restores, from the checkpoint in `directory`, only the variables saved from `tasks`
  // ("/job:ps/replica:0/task:0": a restarted parameter server's, which lost them), leaving every
  // other variable as it is; returns how many it restored. Errors as Restore's. May run beside a
  // save of this checkpoint (from another thread): it reads a complete checkpoint and touches no
  // state of this object.
  StatusOr<int> RestoreTasks(Session& session, const std::string& directory,
                             const std::vector<std::string>& tasks) const;
  // Restores the latest checkpoint of the checkpoint directory `directory` (the one its
  // checkpoint.json names, see checkpoint_index.h): its contents, or nullopt when it has none.
  StatusOr<std::optional<RestoredCheckpoint>> RestoreLatest(Session& session,
                                                            const std::string& directory);

  // The saved tensors' names, in shard order.
  std::vector<std::string> tensor_names() const;

 private:
  // One tensor of the checkpoint and the nodes that save and restore it.
  struct Entry {
    std::string name;
    DataType dtype = DataType::kInvalid;
    TensorShape shape;
    std::string device;      // where it is read and restored ("" when unplaced)
    Output value;            // its current value (a read, or an aggregated read)
    std::string value_feed;  // for a client value: the placeholder fed at every save
    Output restored;         // RestoreV2's output
  };
  struct Shard {
    std::string file;
    std::string device;
    std::vector<int> entries;
  };

  Checkpoint() = default;
  // Adds every op of the checkpoint, in the steps below, in this order (each uses what the ones
  // before made).
  Status Build(const Scope& scope, const CheckpointObjects& objects);
  // One entry per object, read under `save`: the plain variables, the distributed variables, then
  // the client's values (placeholders fed at every save).
  Status AddEntries(const Scope& save, const CheckpointObjects& objects);
  // One shard per task, in order of first appearance, and the shards' file names.
  void AssignShards();
  // The synchronous save: every shard's SaveV2 on its task.
  void BuildSave(const Scope& save);
  // The asynchronous save: the snapshot, allocation and release steps, and the background write.
  void BuildSaveAsync(const Scope& save);
  // The restore: one RestoreV2 per shard, then every variable (every component) assigned.
  Status BuildRestore(const Scope& scope, const CheckpointObjects& objects);
  // One SaveV2 per shard, on the shard's device, of `values` (one per entry) into
  // `target_directory`.
  std::vector<Output> SaveShards(const Scope& in, const Input& target_directory,
                                 const std::vector<Output>& values, bool background) const;
  // Waits for a save in flight, makes the temporary directory of a save to `directory` (in
  // *temp) and returns the save step's feeds: the values into `value_feeds`, the temporary
  // directory into `directory_feed`.
  StatusOr<NamedTensorList> StartSave(const std::string& directory_feed,
                                      const std::vector<std::string>& value_feeds,
                                      const std::string& directory, const CheckpointValues& values,
                                      std::string* temp);
  // Runs the save step `target` with `feeds`, then Finish; on an error removes `temp`.
  Status Write(Session& session, const NamedTensorList& feeds, const std::string& target,
               const std::string& temp, const std::string& directory, int64_t step) const;
  // Manifest of the shards written into `temp`, written there; then `temp` becomes `directory`.
  Status Finish(const std::string& temp, const std::string& directory, int64_t step) const;
  // What RestoreV2 fills for entries_[entry], for checking a manifest before a restore.
  io::RestoreTarget RestoreTargetOf(size_t entry) const;
  // A fresh temporary directory next to `directory`.
  StatusOr<std::string> MakeTempDirectory(const std::string& directory);

  std::vector<Entry> entries_;
  // Per entry: where it sits in a variable cut into parts along its rows (variable_parts.h).
  std::vector<ops::RestorePart> parts_;
  std::vector<Shard> shards_;
  int replicas_ = 1;
  // Node names of the graph's checkpoint ops.
  std::string save_directory_;
  std::string save_target_;
  std::vector<std::string> save_value_feeds_;
  std::string snapshot_target_;
  std::string allocate_snapshots_target_;
  std::string release_snapshot_target_;
  std::string async_directory_;
  std::string async_target_;
  std::vector<std::string> async_value_feeds_;
  std::string restore_directory_;
  std::string restore_target_;
  // Per task ("/job:ps/replica:0/task:1"): the target restoring the variables saved from it, and
  // how many those are.
  struct TaskRestore {
    std::string target;
    int variables = 0;
  };
  std::map<std::string, TaskRestore> task_restore_targets_;
  std::vector<std::string> restore_value_fetches_;
  std::vector<std::string> value_names_;
  int64_t temp_counter_ = 0;

  Mutex mu_;
  std::thread writer_;  // the SaveAsync in flight; joined by WaitForSave
  Status writer_status_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft::checkpoint
