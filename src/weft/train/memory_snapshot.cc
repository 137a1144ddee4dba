// Memory snapshots (see the header).
#include "weft/train/memory_snapshot.h"

#include <cstdlib>
#include <utility>
#include <vector>

#include "weft/core/str_util.h"
#include "weft/io/durable_file.h"
#include "weft/io/safetensors.h"

namespace weft::train {
namespace {

constexpr char kFileName[] = "state.safetensors";
constexpr char kGlobalStepKey[] = "weft/global_step";
constexpr char kEpochKey[] = "weft/epoch";
constexpr char kBatchIndexKey[] = "weft/batch_index";

// The int64 `key` of the metadata; DataLoss naming the file when missing or not a number.
StatusOr<int64_t> MetadataNumber(const io::SafetensorsReader& reader, const char* key) {
  auto it = reader.metadata().find(key);
  if (it == reader.metadata().end()) {
    return DataLoss(reader.path(), " is no memory snapshot: its metadata has no ", key);
  }
  char* end = nullptr;
  const long long value = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || value < 0) {
    return DataLoss(reader.path(), ": ", key, " is '", it->second, "', not a step count");
  }
  return static_cast<int64_t>(value);
}

}  // namespace

Status WriteMemorySnapshot(const std::string& directory, const MemorySnapshot& snapshot) {
  WEFT_RETURN_IF_ERROR(io::CreateDirectories(directory));
  std::vector<std::pair<std::string, Tensor>> tensors(snapshot.state.begin(), snapshot.state.end());
  const std::map<std::string, std::string> metadata = {
      {kGlobalStepKey, std::to_string(snapshot.position.global_step)},
      {kEpochKey, std::to_string(snapshot.position.epoch)},
      {kBatchIndexKey, std::to_string(snapshot.position.batch_index)}};
  return io::WriteSafetensorsFile(io::JoinPath(directory, kFileName), tensors, metadata).status();
}

StatusOr<std::optional<MemorySnapshot>> ReadMemorySnapshot(const std::string& directory) {
  const std::string path = io::JoinPath(directory, kFileName);
  if (!io::PathExists(path)) return std::optional<MemorySnapshot>();
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<io::SafetensorsReader> reader,
                        io::SafetensorsReader::Open(path));
  MemorySnapshot snapshot;
  WEFT_ASSIGN_OR_RETURN(snapshot.position.global_step, MetadataNumber(*reader, kGlobalStepKey));
  WEFT_ASSIGN_OR_RETURN(snapshot.position.epoch, MetadataNumber(*reader, kEpochKey));
  WEFT_ASSIGN_OR_RETURN(snapshot.position.batch_index, MetadataNumber(*reader, kBatchIndexKey));
  for (const io::SafetensorsEntry& entry : reader->tensors()) {
    WEFT_ASSIGN_OR_RETURN(snapshot.state[entry.name], reader->Read(entry.name));
  }
  return std::optional<MemorySnapshot>(std::move(snapshot));
}

std::string DefaultMemorySnapshotDirectory(const std::string& job, int worker) {
  return StrCat("/dev/shm/weft-snapshots/", job, "/worker-", worker);
}

}  // namespace weft::train
