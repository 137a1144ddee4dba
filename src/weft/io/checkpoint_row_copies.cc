#include "weft/io/checkpoint_row_copies.h"

#include <algorithm>

#include "weft/core/str_util.h"
#include "weft/io/durable_file.h"

namespace weft::io {
namespace {

// `shape` with its first dimension set to `rows`.
TensorShape WithRows(const TensorShape& shape, int64_t rows) {
  std::vector<int64_t> dims = shape.dim_sizes();
  dims[0] = rows;
  return TensorShape(dims);
}

// How the model's variable looks beside a saved tensor of the whole shape, for messages.
std::string ModelsVariable(const RestoreTarget& target, const TensorShape& whole) {
  if (target.whole_name.empty()) {
    return StrCat("the model's variable has shape ", whole.DebugString());
  }
  return StrCat("the model's variable '", target.name, "' is rows ", target.offset, "..",
                target.offset + target.shape.dim_size(0), " of one of shape ", whole.DebugString());
}

// Neither the target's own tensor nor the whole it is part of (`whole_name`, when it is one).
Status NoSuchTensor(const std::string& directory, const RestoreTarget& target,
                    const std::string& whole_name) {
  return NotFound("checkpoint ", directory, " has no tensor '", target.name, "'",
                  target.whole_name.empty()
                      ? std::string()
                      : StrCat(" nor a tensor '", whole_name, "' it is part of"),
                  " (the model has a variable of that name; was it saved from another model?)");
}

// Saved tensor `name` in `where` has `saved` rows where the model's `model_side` says otherwise.
Status ShapeDiffers(const std::string& name, const std::string& where, const TensorShape& saved,
                    const std::string& model_side) {
  return InvalidArgument("tensor '", name, "' in ", where, " has shape ", saved.DebugString(),
                         " but ", model_side);
}

Status DtypeDiffers(const std::string& name, const std::string& where, DataType saved,
                    const RestoreTarget& target) {
  return InvalidArgument("tensor '", name, "' in ", where, " is ", DataTypeName(saved),
                         " but the model's variable is ", DataTypeName(target.dtype));
}

// The target's rows of the whole tensor `whole_name` of `whole_rows` rows.
StatusOr<std::vector<RowCopy>> CopiesOfWhole(const CheckpointManifest& manifest,
                                             const std::string& directory,
                                             const RestoreTarget& target,
                                             const std::string& whole_name, int64_t whole_rows) {
  const TensorShape whole_shape = WithRows(target.shape, whole_rows);
  const int64_t first = target.offset;
  const int64_t end = target.offset + target.shape.dim_size(0);
  if (auto partitioned = manifest.partitioned.find(whole_name);
      partitioned != manifest.partitioned.end()) {
    const ManifestPartitioned& saved = partitioned->second;
    const std::string where = StrCat(directory, " (saved in ", saved.parts.size(), " parts)");
    if (saved.dtype != target.dtype) return DtypeDiffers(whole_name, where, saved.dtype, target);
    if (saved.shape != whole_shape) {
      return ShapeDiffers(whole_name, where, saved.shape, ModelsVariable(target, whole_shape));
    }
    std::vector<RowCopy> copies;
    for (const ManifestPart& part : saved.parts) {
      const int64_t part_end = part.offset + manifest.tensors.at(part.tensor).shape.dim_size(0);
      const int64_t lo = std::max(first, part.offset);
      const int64_t hi = std::min(end, part_end);
      if (lo < hi) copies.push_back({part.tensor, lo - part.offset, lo - first, hi - lo});
    }
    return copies;
  }
  auto saved = manifest.tensors.find(whole_name);
  if (saved == manifest.tensors.end()) return NoSuchTensor(directory, target, whole_name);
  const std::string where = JoinPath(directory, saved->second.shard);
  if (saved->second.dtype != target.dtype) {
    return DtypeDiffers(whole_name, where, saved->second.dtype, target);
  }
  if (saved->second.shape != whole_shape) {
    return ShapeDiffers(whole_name, where, saved->second.shape,
                        ModelsVariable(target, whole_shape));
  }
  return std::vector<RowCopy>{{whole_name, first, 0, end - first}};
}

}  // namespace

StatusOr<std::vector<RowCopy>> FindRowCopies(const CheckpointManifest& manifest,
                                             const std::string& directory,
                                             const RestoreTarget& target) {
  const bool is_part = !target.whole_name.empty();
  if (is_part && target.shape.dims() == 0) {
    return InvalidArgument("variable '", target.name, "' is a scalar, so not a part of '",
                           target.whole_name, "'");
  }
  if (is_part &&
      (target.offset < 0 || target.whole_rows < target.offset + target.shape.dim_size(0))) {
    return InvalidArgument("variable '", target.name, "': rows ", target.offset, "..",
                           target.offset + target.shape.dim_size(0), " are not rows of '",
                           target.whole_name, "', which has ", target.whole_rows);
  }
  // A part whose whole the checkpoint holds in parts goes by its rows, not its name: "emb/part_1"
  // of a table cut in 3 is not "emb/part_1" of one cut in 2, even when both have as many rows.
  if (is_part && manifest.partitioned.contains(target.whole_name)) {
    return CopiesOfWhole(manifest, directory, target, target.whole_name, target.whole_rows);
  }
  auto saved = manifest.tensors.find(target.name);
  if (saved != manifest.tensors.end()) {
    const std::string path = JoinPath(directory, saved->second.shard);
    if (saved->second.dtype != target.dtype) {
      return DtypeDiffers(target.name, path, saved->second.dtype, target);
    }
    if (saved->second.shape == target.shape) {
      const int64_t rows = target.shape.dims() > 0 ? target.shape.dim_size(0) : 1;
      return std::vector<RowCopy>{{target.name, 0, 0, rows}};
    }
    // A part saved under its own name but cut differently: its rows come from the whole below.
    if (!is_part) {
      return ShapeDiffers(target.name, path, saved->second.shape,
                          ModelsVariable(target, target.shape));
    }
  }
  if (target.shape.dims() == 0) return NoSuchTensor(directory, target, target.name);
  return CopiesOfWhole(manifest, directory, target, is_part ? target.whole_name : target.name,
                       is_part ? target.whole_rows : target.shape.dim_size(0));
}

bool IsWholeTensorCopy(const std::vector<RowCopy>& copies, const CheckpointManifest& manifest,
                       const RestoreTarget& target) {
  if (copies.size() != 1 || copies[0].from_row != 0) return false;
  auto saved = manifest.tensors.find(copies[0].tensor);
  return saved != manifest.tensors.end() && saved->second.shape == target.shape;
}

}  // namespace weft::io
