// Where a restore finds the values of one variable in a checkpoint: the saved tensor of its name
// when the checkpoint holds it as it is, otherwise the rows of the whole tensor it is part of (a
// ShardedVariable's part), from whichever saved parts hold them, however the saving run cut it.
// This is what lets a table saved by 2 parameter servers restore onto 3, or onto one device.
// Used by the RestoreV2 kernel and, to check a checkpoint before anything changes, by
// checkpoint::Checkpoint. Pure functions of the manifest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/core/statusor.h"
#include "weft/core/tensor_shape.h"
#include "weft/io/checkpoint_manifest.h"

namespace weft::io {

// A variable a restore fills: its name, dtype and shape, and, when it is rows [offset, offset +
// shape[0]) of a larger tensor (one part of a partitioned variable), that tensor's name and row
// count.
struct RestoreTarget {
  std::string name;
  DataType dtype = DataType::kInvalid;
  TensorShape shape;
  std::string whole_name;  // "" when the variable is not a part
  int64_t whole_rows = 0;
  int64_t offset = 0;
};

// Rows [from_row, from_row + rows) of the saved tensor `tensor` fill rows [to_row, to_row + rows)
// of the target.
struct RowCopy {
  std::string tensor;
  int64_t from_row = 0;
  int64_t to_row = 0;
  int64_t rows = 0;
};

// How to fill `target` from the checkpoint `manifest` describes (`directory` names it in errors):
// one copy of the saved tensor of the target's name when its dtype and shape match; else, for a
// tensor of rank 1 or more, the target's rows of the whole tensor (the one it is part of, or its
// own name), from the saved tensor of that name or the parts of the partitioned tensor of that
// name. NotFound when the checkpoint holds neither, InvalidArgument naming the tensor, the file and
// both dtypes or shapes when they differ.
StatusOr<std::vector<RowCopy>> FindRowCopies(const CheckpointManifest& manifest,
                                             const std::string& directory,
                                             const RestoreTarget& target);

// Whether `copies` is one copy of a saved tensor exactly the target's shape (read straight into
// the target, no rows moved).
bool IsWholeTensorCopy(const std::vector<RowCopy>& copies, const CheckpointManifest& manifest,
                       const RestoreTarget& target);

}  // namespace weft::io
