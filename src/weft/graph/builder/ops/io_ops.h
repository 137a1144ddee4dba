// Typed builders for the checkpoint ops SaveV2 and RestoreV2 (see ops/io_ops.cc for their
// semantics), and the uint8 path tensors they take. After an error in the scope SaveV2 returns an
// empty Output and RestoreV2 an empty vector; the scope keeps the error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/graph/builder/node_builder.h"

namespace weft::ops {

// Writes `tensors` as `tensor_names` (same length) to `shard_file` in the directory `directory`
// names (a uint8 vector; see PathTensor). `background`: the save runs beside training and paces
// its writing. Returns the op, to run as a target.
Output SaveV2(const Scope& scope, const Input& directory,
              const std::vector<std::string>& tensor_names, const std::string& shard_file,
              const std::vector<Output>& tensors, bool background = false);
// Where a restored tensor sits in a larger one cut along its rows (one part of a partitioned
// variable): rows [offset, offset + its first dimension) of `whole_name`, which has `whole_rows`.
// An empty `whole_name`: the tensor is not a part.
struct RestorePart {
  std::string whole_name;
  int64_t whole_rows = 0;
  int64_t offset = 0;
};

// Reads `tensor_names` (with the dtypes and shapes the caller expects) from the checkpoint whose
// directory `directory` names; one output per name. `parts` (empty, or one per name) says which
// are parts of a partitioned variable: those restore from however the checkpoint cut the whole.
std::vector<Output> RestoreV2(const Scope& scope, const Input& directory,
                              const std::vector<std::string>& tensor_names,
                              const std::vector<DataType>& dtypes,
                              const std::vector<TensorShape>& shapes,
                              const std::vector<RestorePart>& parts = {});

// `path` as the uint8 vector of its bytes that SaveV2 and RestoreV2 take.
Tensor PathTensor(const std::string& path);

}  // namespace weft::ops
