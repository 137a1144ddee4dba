// Memory snapshots of an elastic worker's state: every few steps each worker writes its variables,
// optimizer state and position to a directory in RAM (tmpfs, /dev/shm by default), so that a job
// that lost more workers than it can continue with resumes from RAM, not disk, when the same
// command runs again: the host's memory outlives the processes (not the machine). One file per
// worker, "<directory>/state.safetensors" (Weft's safetensors, CRC-checked on every read), whose
// metadata holds the position; written durably, so a worker killed mid-write leaves the previous
// snapshot whole. Plain functions; no shared state.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "weft/core/statusor.h"
#include "weft/core/tensor.h"
#include "weft/distributed/cluster/elastic_membership.h"

namespace weft::train {

struct MemorySnapshot {
  std::map<std::string, Tensor> state;  // by variable name
  ElasticPosition position;
};

// Writes `snapshot` to `directory` (created when missing), replacing the previous one. Errors name
// the path (a full tmpfs is "no space left on device").
Status WriteMemorySnapshot(const std::string& directory, const MemorySnapshot& snapshot);

// The snapshot in `directory`, or nullopt when there is none; DataLoss naming the file when it is
// corrupt or its position is missing.
StatusOr<std::optional<MemorySnapshot>> ReadMemorySnapshot(const std::string& directory);

// The default directory of a job's worker: "/dev/shm/weft-snapshots/<job>/worker-<worker>", where
// <job> names the training (the same command gives the same name).
std::string DefaultMemorySnapshotDirectory(const std::string& job, int worker);

}  // namespace weft::train
