// Typed builders for the checkpoint ops SaveV2 and RestoreV2 (see ops/io_ops.cc for their
// semantics), and the uint8 path tensors they take. After an error in the scope SaveV2 returns an
// empty Output and RestoreV2 an empty vector; the scope keeps the error.
#pragma once

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
// Reads `tensor_names` (with the dtypes and shapes the caller expects) from the checkpoint whose
// directory `directory` names; one output per name.
std::vector<Output> RestoreV2(const Scope& scope, const Input& directory,
                              const std::vector<std::string>& tensor_names,
                              const std::vector<DataType>& dtypes,
                              const std::vector<TensorShape>& shapes);

// `path` as the uint8 vector of its bytes that SaveV2 and RestoreV2 take.
Tensor PathTensor(const std::string& path);

}  // namespace weft::ops
