// Typed builders for the array ops (see ops/array_ops.cc for their semantics). Each returns the
// op's output; after an error in the scope it returns an empty Output and the scope keeps the
// error.
#pragma once

#include <string_view>
#include <vector>

#include "weft/graph/builder/node_builder.h"

namespace weft::ops {

// A constant; `value` may be a Tensor or a C++ literal (2.0f, {1, 2, 3}).
Output Const(const Scope& scope, const Input& value);
// A value fed at Run time; `shape` may leave dims unknown (-1) or be entirely unknown.
Output Placeholder(const Scope& scope, DataType dtype, const PartialShape& shape = PartialShape());
Output Identity(const Scope& scope, const Input& input);
Output StopGradient(const Scope& scope, const Input& input);
// An op that does nothing; used to group control dependencies (a training step's target).
Output NoOp(const Scope& scope);

Output Reshape(const Scope& scope, const Input& tensor, const Input& shape);
Output Shape(const Scope& scope, const Input& input, DataType out_type = DataType::kInt32);
Output Size(const Scope& scope, const Input& input, DataType out_type = DataType::kInt32);
Output Rank(const Scope& scope, const Input& input);
Output ExpandDims(const Scope& scope, const Input& input, const Input& axis);
Output Squeeze(const Scope& scope, const Input& input, const std::vector<int64_t>& axes = {});
Output Fill(const Scope& scope, const Input& dims, const Input& value);
Output ZerosLike(const Scope& scope, const Input& x);
Output OnesLike(const Scope& scope, const Input& x);
Output Transpose(const Scope& scope, const Input& x, const Input& perm);
// ConcatV2: joins `values` along `axis`.
Output Concat(const Scope& scope, const std::vector<Output>& values, const Input& axis);
Output Slice(const Scope& scope, const Input& input, const Input& begin, const Input& size);
Output BroadcastTo(const Scope& scope, const Input& input, const Input& shape);
Output Tile(const Scope& scope, const Input& input, const Input& multiples);
// The slices of `params` at `indices` (int32/int64) along the scalar `axis` (batch_dims 0).
Output GatherV2(const Scope& scope, const Input& params, const Input& indices, const Input& axis);
// Sums the slices of `data` into the `num_segments` segments `segment_ids` names (negative ids
// are dropped).
Output UnsortedSegmentSum(const Scope& scope, const Input& data, const Input& segment_ids,
                          const Input& num_segments);
// The rows of `data` split by `partitions` (int32, a prefix of data's shape, values in
// [0, num_partitions)): output i holds the rows of partition i, in order. Empty after an error.
std::vector<Output> DynamicPartition(const Scope& scope, const Input& data, const Input& partitions,
                                     int64_t num_partitions);
// merged[indices[m][...]] = data[m][...]: rows put back at the positions their indices name.
Output DynamicStitch(const Scope& scope, const std::vector<Output>& indices,
                     const std::vector<Output>& data);
// start, start + delta, ... below `limit` (int32 or int64 scalars).
Output Range(const Scope& scope, const Input& start, const Input& limit, const Input& delta);
// Each innermost matrix of `input` with the elements outside a band zeroed: num_lower
// subdiagonals and num_upper superdiagonals are kept (int32 or int64 scalars; negative: the whole
// triangle). MatrixBandPart(ones, -1, 0) is a causal mask.
Output MatrixBandPart(const Scope& scope, const Input& input, const Input& num_lower,
                      const Input& num_upper);

}  // namespace weft::ops
