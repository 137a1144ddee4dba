// The index of a directory of checkpoints, "<dir>/checkpoint.json": the latest complete
// checkpoint and the ones kept, oldest first. CheckpointManager writes it last, after the
// checkpoint it names is complete; every reader checks it. Plain functions; no shared state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weft/core/statusor.h"

namespace weft::checkpoint {

inline constexpr char kCheckpointIndexName[] = "checkpoint.json";

// What "<dir>/checkpoint.json" says.
struct CheckpointIndex {
  std::string latest;                    // "ckpt-200" ("" when there is none)
  std::vector<std::string> checkpoints;  // kept, oldest first (latest last)
};

// Reads the index of `directory`: nullopt when there is none (a fresh directory); DataLoss naming
// the file when it does not parse, or names a checkpoint that is missing.
StatusOr<std::optional<CheckpointIndex>> ReadCheckpointIndex(const std::string& directory);

// Writes the index of `directory` durably (temporary name, fsync, rename, directory fsync).
Status WriteCheckpointIndex(const std::string& directory, const CheckpointIndex& index);

}  // namespace weft::checkpoint
