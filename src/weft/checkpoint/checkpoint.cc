#include "weft/checkpoint/checkpoint.h"

#include <algorithm>
#include <set>

#include <unistd.h>

#include "weft/checkpoint/checkpoint_index.h"
#include "weft/checkpoint/variable_parts.h"
#include "weft/core/str_util.h"
#include "weft/framework/device_name_utils.h"
#include "weft/io/checkpoint_manifest.h"
#include "weft/io/checkpoint_row_copies.h"
#include "weft/io/durable_file.h"
#include "weft/io/safetensors.h"

namespace weft::checkpoint {
namespace {

// The task part of a device name ("/job:worker/replica:0/task:1"): tensors of one task go to one
// shard. "" for an unplaced or unparsable device (one shard for all of those).
std::string TaskOf(const std::string& device) {
  if (device.empty()) return "";
  StatusOr<ParsedDeviceName> parsed = ParseDeviceName(device);
  if (!parsed.ok()) return "";
  return StrCat("/job:", parsed->has_job ? parsed->job : "",
                "/replica:", parsed->has_replica ? parsed->replica : 0,
                "/task:", parsed->has_task ? parsed->task : 0);
}

std::string ShardFile(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof(name), "shard-%05zu-of-%05zu.safetensors", index, count);
  return name;
}

std::string DeviceOf(const Variable& variable) {
  return variable.handle().node()->requested_device();
}

}  // namespace

StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Create(const Scope& scope,
                                                         const CheckpointObjects& objects) {
  std::unique_ptr<Checkpoint> checkpoint(new Checkpoint());
  Status status = checkpoint->Build(scope, objects);
  if (!status.ok()) return status.WithContext("building the checkpoint ops");
  return checkpoint;
}

Checkpoint::~Checkpoint() { WaitForSave().IgnoreError(); }

Status Checkpoint::Build(const Scope& scope, const CheckpointObjects& objects) {
  WEFT_RETURN_IF_ERROR(scope.status());
  replicas_ = objects.replicas;
  Scope save = scope.NewSubScope("save");
  WEFT_RETURN_IF_ERROR(AddEntries(save, objects));
  WEFT_RETURN_IF_ERROR(save.status());
  if (entries_.empty()) return InvalidArgument("nothing to checkpoint");
  std::vector<NamedVariable> named;
  for (const Entry& entry : entries_) named.push_back({entry.name, entry.dtype, entry.shape});
  parts_ = FindVariableParts(named);
  AssignShards();
  BuildSave(save);
  BuildSaveAsync(save);
  WEFT_RETURN_IF_ERROR(BuildRestore(scope, objects));
  return scope.status();
}

Status Checkpoint::AddEntries(const Scope& save, const CheckpointObjects& objects) {
  std::set<std::string> names;
  auto add = [&](Entry entry) -> Status {
    if (!names.insert(entry.name).second) {
      return InvalidArgument("two objects to checkpoint are named '", entry.name, "'");
    }
    entries_.push_back(std::move(entry));
    return Status::OK();
  };
  for (const Variable& variable : objects.variables) {
    if (!variable) return InvalidArgument("an empty Variable was given to checkpoint");
    WEFT_RETURN_IF_ERROR(add({variable.name(), variable.dtype(), variable.shape(),
                              DeviceOf(variable), variable.Read(save), "", Output()}));
  }
  int spread = 0;
  for (const auto& distributed : objects.distributed_variables) {
    if (distributed == nullptr) return InvalidArgument("a null DistributedVariable to checkpoint");
    Entry entry{distributed->name(),
                distributed->dtype(),
                distributed->shape(),
                "",
                Output(),
                "",
                Output()};
    if (distributed->synchronization() == distribute::VariableSynchronization::kOnRead) {
      // Saved as the value a cross-replica read gives: the components combined.
      entry.device = distributed->devices()[0];
      WEFT_ASSIGN_OR_RETURN(entry.value, distributed->Read(save, nullptr));
    } else {
      // Components are equal: read each variable from a different one, spreading the writing
      // over the tasks that hold them.
      const int c = spread++ % distributed->num_components();
      entry.device = distributed->devices()[c];
      entry.value = distributed->component(c).Read(save);
    }
    WEFT_RETURN_IF_ERROR(add(std::move(entry)));
  }
  for (const std::string& value : objects.values) {
    Entry entry{value, DataType::kInt64, TensorShape(), "", Output(), "", Output()};
    entry.device = entries_.empty() ? "" : entries_[0].device;
    Output placeholder = ops::Placeholder(save.NewSubScope("values").WithDevice(entry.device),
                                          DataType::kInt64, PartialShape(TensorShape()));
    entry.value = placeholder;
    entry.value_feed = placeholder.name();
    WEFT_RETURN_IF_ERROR(add(std::move(entry)));
    value_names_.push_back(value);
  }
  return Status::OK();
}

void Checkpoint::AssignShards() {
  std::map<std::string, int> shard_of_task;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const std::string task = TaskOf(entries_[i].device);
    auto [it, inserted] = shard_of_task.emplace(task, static_cast<int>(shards_.size()));
    if (inserted) shards_.push_back({"", entries_[i].device, {}});
    shards_[it->second].entries.push_back(static_cast<int>(i));
  }
  for (size_t s = 0; s < shards_.size(); ++s) shards_[s].file = ShardFile(s, shards_.size());
}

std::vector<Output> Checkpoint::SaveShards(const Scope& in, const Input& target_directory,
                                           const std::vector<Output>& values,
                                           bool background) const {
  std::vector<Output> saves;
  for (const Shard& shard : shards_) {
    std::vector<std::string> shard_names;
    std::vector<Output> shard_values;
    for (int e : shard.entries) {
      shard_names.push_back(entries_[e].name);
      shard_values.push_back(values[e]);
    }
    saves.push_back(ops::SaveV2(in.WithDevice(shard.device), target_directory, shard_names,
                                shard.file, shard_values, background));
  }
  return saves;
}

void Checkpoint::BuildSave(const Scope& save) {
  Output directory =
      ops::Placeholder(save.WithOpName("directory"), DataType::kUInt8, PartialShape({-1}));
  save_directory_ = directory.name();
  std::vector<Output> values;
  for (const Entry& entry : entries_) values.push_back(entry.value);
  for (const Entry& entry : entries_) {
    if (!entry.value_feed.empty()) save_value_feeds_.push_back(entry.value_feed);
  }
  save_target_ = ops::NoOp(save.WithOpName("save_all")
                               .WithControlDependencies(
                                   SaveShards(save, directory, values, /*background=*/false)))
                     .name();
}

// The snapshot step (at the step boundary) assigns every value to an alias variable, which shares
// the variable's buffer: no copy, a fraction of a millisecond. The write step (on a background
// thread) first copies each alias into a snapshot variable and destroys the alias, then saves the
// snapshots. The copies take a few milliseconds while the next training step runs its forward pass;
// an update that comes first finds its buffer shared and copies it itself (copy-on-write), so a
// snapshot never sees a later value. The snapshot variables live as long as the session;
// PrepareSaveAsync allocates them, so that copies go into buffers already there.
void Checkpoint::BuildSaveAsync(const Scope& save) {
  Scope snapshot = save.NewSubScope("snapshot");
  Scope async = save.NewSubScope("async");
  std::vector<Output> aliases, allocations, releases, destroys, async_values(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& entry = entries_[i];
    if (!entry.value_feed.empty()) {
      Output placeholder = ops::Placeholder(async.NewSubScope("values").WithDevice(entry.device),
                                            DataType::kInt64, PartialShape(TensorShape()));
      async_value_feeds_.push_back(placeholder.name());
      async_values[i] = placeholder;
      continue;
    }
    Scope on_device = snapshot.WithDevice(entry.device);
    Output alias = ops::VarHandleOp(on_device, entry.dtype, PartialShape(entry.shape));
    Output kept = ops::VarHandleOp(on_device, entry.dtype, PartialShape(entry.shape));
    aliases.push_back(ops::AssignVariableOp(on_device, alias, entry.value));
    releases.push_back(ops::DestroyResourceOp(on_device, alias));
    allocations.push_back(
        ops::AssignVariableOp(on_device, kept, ops::ZerosLike(on_device, entry.value)));
    Scope writing = async.WithDevice(entry.device);
    Output copy = ops::AssignVariableOp(writing, kept, ops::ReadVariableOp(writing, alias));
    Scope copied = writing.WithControlDependencies({copy});
    destroys.push_back(ops::DestroyResourceOp(copied, alias));
    async_values[i] = ops::ReadVariableOp(copied, kept);
  }
  snapshot_target_ =
      ops::NoOp(snapshot.WithOpName("snapshot_all").WithControlDependencies(aliases)).name();
  release_snapshot_target_ =
      ops::NoOp(snapshot.WithOpName("release_all").WithControlDependencies(releases)).name();
  allocate_snapshots_target_ =
      ops::NoOp(snapshot.WithOpName("allocate_all").WithControlDependencies(allocations)).name();
  Output async_directory =
      ops::Placeholder(async.WithOpName("directory"), DataType::kUInt8, PartialShape({-1}));
  async_directory_ = async_directory.name();
  std::vector<Output> async_saves =
      SaveShards(async, async_directory, async_values, /*background=*/true);
  async_saves.insert(async_saves.end(), destroys.begin(), destroys.end());
  async_target_ =
      ops::NoOp(async.WithOpName("write_all").WithControlDependencies(async_saves)).name();
}

Status Checkpoint::BuildRestore(const Scope& scope, const CheckpointObjects& objects) {
  Scope restore = scope.NewSubScope("restore");
  Output restore_directory =
      ops::Placeholder(restore.WithOpName("directory"), DataType::kUInt8, PartialShape({-1}));
  restore_directory_ = restore_directory.name();
  for (const Shard& shard : shards_) {
    std::vector<std::string> shard_names;
    std::vector<DataType> dtypes;
    std::vector<TensorShape> shapes;
    std::vector<ops::RestorePart> parts;
    for (int e : shard.entries) {
      shard_names.push_back(entries_[e].name);
      dtypes.push_back(entries_[e].dtype);
      shapes.push_back(entries_[e].shape);
      parts.push_back(parts_[e]);
    }
    std::vector<Output> outputs = ops::RestoreV2(
        restore.WithDevice(shard.device), restore_directory, shard_names, dtypes, shapes, parts);
    WEFT_RETURN_IF_ERROR(restore.status());
    for (size_t k = 0; k < shard.entries.size(); ++k)
      entries_[shard.entries[k]].restored = outputs[k];
  }
  std::vector<Output> restores;
  size_t next = 0;
  for (const Variable& variable : objects.variables) {
    restores.push_back(variable.Assign(restore, entries_[next++].restored));
  }
  for (const auto& distributed : objects.distributed_variables) {
    WEFT_ASSIGN_OR_RETURN(Output assign,
                          distributed->Assign(restore, entries_[next++].restored, nullptr));
    restores.push_back(assign);
  }
  // The variables saved from each task (restores[e] restores entries_[e]), for RestoreTasks.
  std::map<std::string, std::vector<Output>> by_task;
  for (size_t e = 0; e < restores.size(); ++e) {
    by_task[TaskOf(entries_[e].device)].push_back(restores[e]);
  }
  int task_number = 0;
  for (auto& [task, assigns] : by_task) {
    const std::string target = ops::NoOp(restore.WithOpName(StrCat("restore_task_", task_number++))
                                             .WithControlDependencies(assigns))
                                   .name();
    task_restore_targets_[task] = {target, static_cast<int>(assigns.size())};
  }
  for (; next < entries_.size(); ++next) {
    restore_value_fetches_.push_back(
        ops::Identity(restore.NewSubScope("values").WithDevice(entries_[next].device),
                      entries_[next].restored)
            .name());
  }
  restore_target_ =
      ops::NoOp(restore.WithOpName("restore_all").WithControlDependencies(restores)).name();
  return Status::OK();
}

StatusOr<int> Checkpoint::RestoreTasks(Session& session, const std::string& directory,
                                       const std::vector<std::string>& tasks) const {
  StatusOr<io::CheckpointManifest> manifest = io::CheckpointManifest::Read(directory);
  if (!manifest.ok()) return manifest.status().WithContext(StrCat("restoring ", directory));
  std::vector<std::string> targets;
  int restored = 0;
  for (const std::string& task : tasks) {
    auto found = task_restore_targets_.find(task);
    if (found == task_restore_targets_.end()) continue;
    targets.push_back(found->second.target);
    restored += found->second.variables;
  }
  // Every mismatch the manifest shows for those variables, before anything changes.
  for (size_t e = 0; e < entries_.size(); ++e) {
    if (std::find(tasks.begin(), tasks.end(), TaskOf(entries_[e].device)) == tasks.end()) continue;
    WEFT_RETURN_IF_ERROR(io::FindRowCopies(*manifest, directory, RestoreTargetOf(e)).status());
  }
  if (targets.empty()) return 0;
  std::vector<Tensor> outputs;
  Status status =
      session.Run({{restore_directory_, ops::PathTensor(directory)}}, {}, targets, &outputs);
  if (!status.ok()) return status.WithContext(StrCat("restoring ", directory));
  return restored;
}

StatusOr<std::optional<RestoredCheckpoint>> Checkpoint::RestoreLatest(
    Session& session, const std::string& directory) {
  WEFT_ASSIGN_OR_RETURN(std::optional<CheckpointIndex> index, ReadCheckpointIndex(directory));
  if (!index.has_value() || index->latest.empty()) return std::optional<RestoredCheckpoint>();
  WEFT_ASSIGN_OR_RETURN(RestoredCheckpoint restored,
                        Restore(session, io::JoinPath(directory, index->latest)));
  return std::optional<RestoredCheckpoint>(std::move(restored));
}

io::RestoreTarget Checkpoint::RestoreTargetOf(size_t entry) const {
  return {.name = entries_[entry].name,
          .dtype = entries_[entry].dtype,
          .shape = entries_[entry].shape,
          .whole_name = parts_[entry].whole_name,
          .whole_rows = parts_[entry].whole_rows,
          .offset = parts_[entry].offset};
}

std::vector<std::string> Checkpoint::tensor_names() const {
  std::vector<std::string> names;
  for (const Shard& shard : shards_) {
    for (int e : shard.entries) names.push_back(entries_[e].name);
  }
  return names;
}

StatusOr<NamedTensorList> Checkpoint::StartSave(const std::string& directory_feed,
                                                const std::vector<std::string>& value_feeds,
                                                const std::string& directory,
                                                const CheckpointValues& values, std::string* temp) {
  WEFT_RETURN_IF_ERROR(WaitForSave());
  NamedTensorList feeds;
  for (size_t i = 0; i < value_names_.size(); ++i) {
    auto found = values.find(value_names_[i]);
    if (found == values.end()) {
      return InvalidArgument("the checkpoint saves the value '", value_names_[i],
                             "', but the save did not give it");
    }
    feeds.emplace_back(value_feeds[i], Tensor::Scalar<int64_t>(found->second));
  }
  WEFT_ASSIGN_OR_RETURN(*temp, MakeTempDirectory(directory));
  feeds.emplace_back(directory_feed, ops::PathTensor(*temp));
  return feeds;
}

Status Checkpoint::Write(Session& session, const NamedTensorList& feeds, const std::string& target,
                         const std::string& temp, const std::string& directory,
                         int64_t step) const {
  std::vector<Tensor> outputs;
  Status status = session.Run(feeds, {}, {target}, &outputs);
  if (status.ok()) status = Finish(temp, directory, step);
  if (status.ok()) return status;
  io::RemoveAll(temp).IgnoreError();
  return status.WithContext(StrCat("saving checkpoint ", directory));
}

StatusOr<std::string> Checkpoint::MakeTempDirectory(const std::string& directory) {
  const std::string temp =
      StrCat(directory, ".tmp-", static_cast<int64_t>(getpid()), "-", temp_counter_++);
  WEFT_RETURN_IF_ERROR(io::RemoveAll(temp));
  WEFT_RETURN_IF_ERROR(io::CreateDirectories(temp));
  return temp;
}

Status Checkpoint::Finish(const std::string& temp, const std::string& directory,
                          int64_t step) const {
  io::CheckpointManifest manifest;
  manifest.step = step;
  manifest.replicas = replicas_;
  for (const Shard& shard : shards_) {
    const std::string path = io::JoinPath(temp, shard.file);
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<io::SafetensorsReader> reader,
                          io::SafetensorsReader::Open(path));
    manifest.shards.push_back({shard.file, reader->file_bytes()});
    for (int e : shard.entries) {
      const io::SafetensorsEntry* written = reader->Find(entries_[e].name);
      if (written == nullptr || !written->has_crc32c) {
        return Internal("shard ", path, " lacks tensor '", entries_[e].name, "' or its CRC32C");
      }
      manifest.tensors[written->name] = {shard.file, written->dtype, written->shape,
                                         written->crc32c};
    }
  }
  // The parts of a variable cut along its rows are listed as one tensor too, so that a restore
  // can cut it another way.
  for (size_t e = 0; e < entries_.size(); ++e) {
    const ops::RestorePart& part = parts_[e];
    if (part.whole_name.empty()) continue;
    io::ManifestPartitioned& whole = manifest.partitioned[part.whole_name];
    std::vector<int64_t> dims = entries_[e].shape.dim_sizes();
    dims[0] = part.whole_rows;
    whole.dtype = entries_[e].dtype;
    whole.shape = TensorShape(dims);
    whole.parts.push_back({entries_[e].name, part.offset});
  }
  for (auto& [name, whole] : manifest.partitioned) {
    std::sort(
        whole.parts.begin(), whole.parts.end(),
        [](const io::ManifestPart& a, const io::ManifestPart& b) { return a.offset < b.offset; });
  }
  WEFT_RETURN_IF_ERROR(manifest.Write(temp));
  // Replacing a checkpoint: the old one moves aside first, so a crash leaves one of the two.
  std::string aside;
  if (io::PathExists(directory)) {
    aside = StrCat(temp, ".old");
    WEFT_RETURN_IF_ERROR(io::RenameDurably(directory, aside));
  }
  WEFT_RETURN_IF_ERROR(io::RenameDurably(temp, directory));
  if (!aside.empty()) WEFT_RETURN_IF_ERROR(io::RemoveAll(aside));
  return Status::OK();
}

Status Checkpoint::Save(Session& session, const std::string& directory, int64_t step,
                        const CheckpointValues& values) {
  std::string temp;
  WEFT_ASSIGN_OR_RETURN(NamedTensorList feeds,
                        StartSave(save_directory_, save_value_feeds_, directory, values, &temp));
  return Write(session, feeds, save_target_, temp, directory, step);
}

Status Checkpoint::SaveAsync(Session& session, const std::string& directory, int64_t step,
                             const CheckpointValues& values,
                             std::function<Status(const Status&)> done) {
  std::string temp;
  WEFT_ASSIGN_OR_RETURN(NamedTensorList feeds,
                        StartSave(async_directory_, async_value_feeds_, directory, values, &temp));
  std::vector<Tensor> outputs;
  Status snapshot = session.Run({}, {}, {snapshot_target_}, &outputs);
  if (!snapshot.ok()) {
    io::RemoveAll(temp).IgnoreError();
    return snapshot.WithContext(StrCat("snapshotting the variables for checkpoint ", directory));
  }
  writer_ = std::thread(
      [this, &session, feeds = std::move(feeds), temp, directory, step, done = std::move(done)]() {
        Status status = Write(session, feeds, async_target_, temp, directory, step);
        if (done) status = done(status);
        MutexLock lock(mu_);
        writer_status_ = status;
      });
  return Status::OK();
}

Status Checkpoint::PrepareSaveAsync(Session& session) {
  WEFT_RETURN_IF_ERROR(WaitForSave());
  std::vector<Tensor> outputs;
  // Allocating, then one snapshot released at once: the snapshot step's executors are built
  // here rather than at the first save.
  Status status = session.Run({}, {}, {allocate_snapshots_target_}, &outputs);
  if (status.ok()) status = session.Run({}, {}, {snapshot_target_}, &outputs);
  if (status.ok()) status = session.Run({}, {}, {release_snapshot_target_}, &outputs);
  return status.ok() ? status : status.WithContext("allocating the checkpoint's snapshots");
}

Status Checkpoint::WaitForSave() {
  if (!writer_.joinable()) return Status::OK();
  writer_.join();
  MutexLock lock(mu_);
  Status status = writer_status_;
  writer_status_ = Status::OK();
  return status;
}

StatusOr<RestoredCheckpoint> Checkpoint::Restore(Session& session, const std::string& directory) {
  WEFT_RETURN_IF_ERROR(WaitForSave());
  StatusOr<io::CheckpointManifest> manifest = io::CheckpointManifest::Read(directory);
  if (!manifest.ok()) return manifest.status().WithContext(StrCat("restoring ", directory));
  // Every mismatch the manifest shows, before anything changes.
  for (size_t e = 0; e < entries_.size(); ++e) {
    WEFT_RETURN_IF_ERROR(io::FindRowCopies(*manifest, directory, RestoreTargetOf(e)).status());
  }
  std::vector<Tensor> outputs;
  Status status = session.Run({{restore_directory_, ops::PathTensor(directory)}},
                              restore_value_fetches_, {restore_target_}, &outputs);
  if (!status.ok()) return status.WithContext(StrCat("restoring ", directory));
  RestoredCheckpoint restored;
  restored.directory = directory;
  restored.step = manifest->step;
  restored.replicas = manifest->replicas;
  for (size_t i = 0; i < value_names_.size(); ++i) {
    restored.values[value_names_[i]] = *outputs[i].data<int64_t>();
  }
  return restored;
}

}  // namespace weft::checkpoint
