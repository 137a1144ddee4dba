// Which of a checkpoint's variables are the parts of one variable cut along its rows: those named
// "<whole>/part_<i>" for i = 0..k-1 (as ShardedVariable and a sharded Embedding name them, the
// reference's names), and their optimizer slots "<whole>/part_<i>/<slot>", the parts of
// "<whole>/<slot>". A checkpoint saves such parts as one partitioned tensor, so that a restore can
// cut it another way (2 parameter servers to 3, or one device). Pure functions.
#pragma once

#include <string>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/core/tensor_shape.h"
#include "weft/graph/builder/ops/io_ops.h"

namespace weft::checkpoint {

struct NamedVariable {
  std::string name;
  DataType dtype = DataType::kInvalid;
  TensorShape shape;
};

// One RestorePart per variable, in order: where it sits in its whole, or an empty whole_name when
// it is not a part. Parts count only when every index 0..k-1 of a whole is present with one dtype
// and the same trailing dimensions, and no variable is named like the whole itself; otherwise each
// stays a variable of its own.
std::vector<ops::RestorePart> FindVariableParts(const std::vector<NamedVariable>& variables);

}  // namespace weft::checkpoint
