#include "weft/checkpoint/checkpoint_manager.h"

#include <algorithm>

#include "weft/core/str_util.h"
#include "weft/io/durable_file.h"

namespace weft::checkpoint {
namespace {

std::string CheckpointName(int64_t step) { return StrCat("ckpt-", step); }

}  // namespace

CheckpointManager::CheckpointManager(Checkpoint* checkpoint, std::string directory, int max_to_keep)
    : checkpoint_(checkpoint), directory_(std::move(directory)), max_to_keep_(max_to_keep) {}

CheckpointManager::~CheckpointManager() { checkpoint_->WaitForSave().IgnoreError(); }

StatusOr<std::string> CheckpointManager::LatestCheckpoint() const {
  WEFT_ASSIGN_OR_RETURN(std::optional<CheckpointIndex> index, ReadCheckpointIndex(directory_));
  if (!index.has_value() || index->latest.empty()) return std::string();
  return io::JoinPath(directory_, index->latest);
}

Status CheckpointManager::Prepare() {
  if (prepared_) return Status::OK();
  WEFT_RETURN_IF_ERROR(io::CreateDirectories(directory_));
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> entries, io::ListDirectory(directory_));
  for (const std::string& entry : entries) {
    if (entry.starts_with("ckpt-") && entry.find(".tmp-") != std::string::npos) {
      WEFT_RETURN_IF_ERROR(io::RemoveAll(io::JoinPath(directory_, entry)));
    }
  }
  prepared_ = true;
  return Status::OK();
}

Status CheckpointManager::Commit(const std::string& name) {
  WEFT_ASSIGN_OR_RETURN(std::optional<CheckpointIndex> previous, ReadCheckpointIndex(directory_));
  CheckpointIndex index = previous.value_or(CheckpointIndex());
  std::erase(index.checkpoints, name);
  index.checkpoints.push_back(name);
  index.latest = name;
  std::vector<std::string> dropped;
  if (max_to_keep_ >= 1) {
    while (static_cast<int>(index.checkpoints.size()) > max_to_keep_) {
      dropped.push_back(index.checkpoints.front());
      index.checkpoints.erase(index.checkpoints.begin());
    }
  }
  WEFT_RETURN_IF_ERROR(WriteCheckpointIndex(directory_, index));
  for (const std::string& old : dropped) {
    WEFT_RETURN_IF_ERROR(io::RemoveAll(io::JoinPath(directory_, old)));
  }
  return Status::OK();
}

Status CheckpointManager::Save(Session& session, int64_t step, const CheckpointValues& values) {
  WEFT_RETURN_IF_ERROR(checkpoint_->WaitForSave());
  WEFT_RETURN_IF_ERROR(Prepare());
  const std::string name = CheckpointName(step);
  WEFT_RETURN_IF_ERROR(checkpoint_->Save(session, io::JoinPath(directory_, name), step, values));
  return Commit(name);
}

Status CheckpointManager::SaveAsync(Session& session, int64_t step, const CheckpointValues& values,
                                    StatusCallback done) {
  WEFT_RETURN_IF_ERROR(checkpoint_->WaitForSave());
  WEFT_RETURN_IF_ERROR(Prepare());
  const std::string name = CheckpointName(step);
  return checkpoint_->SaveAsync(session, io::JoinPath(directory_, name), step, values,
                                [this, name, done = std::move(done)](const Status& saved) {
                                  Status status = saved.ok() ? Commit(name) : saved;
                                  if (done) done(status);
                                  return status;
                                });
}

Status CheckpointManager::WaitForSave() { return checkpoint_->WaitForSave(); }

StatusOr<std::optional<RestoredCheckpoint>> CheckpointManager::RestoreLatest(Session& session) {
  return checkpoint_->RestoreLatest(session, directory_);
}

}  // namespace weft::checkpoint
