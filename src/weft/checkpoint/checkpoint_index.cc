#include "weft/checkpoint/checkpoint_index.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "weft/core/str_util.h"
#include "weft/io/durable_file.h"

namespace weft::checkpoint {
namespace {

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

Status WriteCheckpointIndex(const std::string& directory, const CheckpointIndex& index) {
  return io::WriteFileDurably(io::JoinPath(directory, kCheckpointIndexName), IndexToJson(index));
}

}  // namespace weft::checkpoint
