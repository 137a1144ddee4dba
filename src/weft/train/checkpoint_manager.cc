#include "weft/train/checkpoint_manager.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "weft/core/str_util.h"
#include "weft/io/durable_file.h"

namespace weft::train {
namespace {

std::string CheckpointName(int64_t step) { return StrCat("ckpt-", step); }

std::string IndexToJson(const CheckpointIndex& index) {
  nlohmann::json json;
  json["latest"] = index.latest;
  json["checkpoints"] = index.checkpoints;
  return json.dump(2) + "\n";
}

}  // namespace

StatusOr<std::optional<CheckpointIndex>> ReadCheckpointIndex(const std::string& directory) {
  const std::string path = io::JoinPath(directory, kCheckpointIndexName);
  if (!io::PathExists(path)) return std::optional<CheckpointIndex>();
  WEFT_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(path));
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](std::string_view why) {
    return DataLoss("checkpoint index ", path, " is corrupt: ", why);
  };
  if (json.is_discarded() || !json.is_object()) return bad("not a JSON object");
  if (!json.contains("latest") || !json["latest"].is_string()) return bad("no string 'latest'");
  if (!json.contains("checkpoints") || !json["checkpoints"].is_array()) {
    return bad("no array 'checkpoints'");
  }
  CheckpointIndex index;
  index.latest = json["latest"].get<std::string>();
  for (const nlohmann::json& name : json["checkpoints"]) {
    if (!name.is_string()) return bad("a checkpoint name that is not a string");
    index.checkpoints.push_back(name.get<std::string>());
  }
  for (const std::string& name : index.checkpoints) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      return bad(StrCat("checkpoint name '", name, "' is not a plain directory name"));
    }
  }
  if (!index.latest.empty()) {
    if (std::find(index.checkpoints.begin(), index.checkpoints.end(), index.latest) ==
        index.checkpoints.end()) {
      return bad(StrCat("latest '", index.latest, "' is not among the checkpoints"));
    }
    if (!io::PathExists(io::JoinPath(directory, index.latest))) {
      return DataLoss("checkpoint index ", path, " names ", index.latest, ", but ",
                      io::JoinPath(directory, index.latest), " is missing");
    }
  }
  return std::optional<CheckpointIndex>(std::move(index));
}

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
  WEFT_RETURN_IF_ERROR(
      io::WriteFileDurably(io::JoinPath(directory_, kCheckpointIndexName), IndexToJson(index)));
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
                                    std::function<void(const Status&)> done) {
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
  WEFT_RETURN_IF_ERROR(checkpoint_->WaitForSave());
  WEFT_ASSIGN_OR_RETURN(std::string latest, LatestCheckpoint());
  if (latest.empty()) return std::optional<RestoredCheckpoint>();
  WEFT_ASSIGN_OR_RETURN(RestoredCheckpoint restored, checkpoint_->Restore(session, latest));
  return std::optional<RestoredCheckpoint>(std::move(restored));
}

}  // namespace weft::train
