// The manifest of one checkpoint ("manifest.json" in its directory): which shard file holds each
// tensor, with its dtype, shape and CRC32C, which tensors are the parts of one tensor cut along its
// rows, and what the checkpoint is (format version, global step, how many replicas trained it).
// Written last, through a DurableFileWriter, by whoever finishes a save (the chief); read first by
// every restore. Parsing never trusts the file: bad JSON, a missing field, an unknown dtype, a
// tensor naming a shard that is not listed are DataLoss errors naming the file (and the tensor).
// Plain values; no shared state.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/core/statusor.h"
#include "weft/core/tensor_shape.h"

namespace weft::io {

inline constexpr int kCheckpointFormatVersion = 1;
inline constexpr char kCheckpointManifestName[] = "manifest.json";

struct ManifestShard {
  // Relative to the checkpoint directory, e.g. "shard-00000-of-00002.safetensors".
  std::string file;
  uint64_t bytes = 0;  // the file's exact size
};

struct ManifestTensor {
  std::string shard;  // a ManifestShard::file
  DataType dtype = DataType::kInvalid;
  TensorShape shape;
  uint32_t crc32c = 0;
};

// One part of a partitioned tensor: the saved tensor that holds its rows [offset, offset + the
// part's first dimension).
struct ManifestPart {
  std::string tensor;  // a key of CheckpointManifest::tensors
  int64_t offset = 0;
};

// A tensor saved in parts cut along its first dimension (a ShardedVariable's parts, each written
// by the task that held it), so that a restore can cut it again another way.
struct ManifestPartitioned {
  DataType dtype = DataType::kInvalid;
  TensorShape shape;                // the whole tensor's
  std::vector<ManifestPart> parts;  // in row order, covering every row once
};

struct CheckpointManifest {
  int format_version = kCheckpointFormatVersion;
  int64_t step = 0;
  int replicas = 1;
  std::vector<ManifestShard> shards;
  std::map<std::string, ManifestTensor> tensors;  // by tensor name
  // By the whole tensor's name, which no saved tensor has. Absent from the JSON when empty.
  std::map<std::string, ManifestPartitioned> partitioned;

  // Pretty-printed JSON (dtypes by their safetensors names, CRCs as 8 hex digits).
  std::string ToJson() const;
  // Parses and checks `json`; `path` only names the file in errors.
  static StatusOr<CheckpointManifest> FromJson(const std::string& json, const std::string& path);
  // Reads "<directory>/manifest.json".
  static StatusOr<CheckpointManifest> Read(const std::string& directory);
  // Writes "<directory>/manifest.json" durably.
  Status Write(const std::string& directory) const;
};

}  // namespace weft::io
