// Broadcasting arithmetic shared by the math kernels: the NumPy broadcast of two shapes reduced to
// the fewest dimensions that describe it (adjacent dimensions that broadcast the same way are
// merged, size-1 output dimensions dropped), and the gradient reduction axes that
// BroadcastGradientArgs returns. Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "weft/core/tensor_shape.h"

namespace weft::kernels {

struct BroadcastPlan {
  TensorShape output_shape;
  // False when x, y and the output hold the same number of elements in the same order, so the
  // op can run over flat buffers.
  bool needs_broadcast = false;
  // Collapsed dims, equal length, valid when needs_broadcast: x and y have either the output's
  // size or 1 in each dimension, and consecutive dimensions differ in which side is broadcast.
  std::vector<int64_t> x_dims;
  std::vector<int64_t> y_dims;
  std::vector<int64_t> output_dims;
};

// The plan for `x op y`; InvalidArgument "incompatible shapes: [2,3] vs. [4]" when a dimension
// pair is neither equal nor has a 1.
StatusOr<BroadcastPlan> MakeBroadcastPlan(const TensorShape& x, const TensorShape& y);

// Expands `source` (row-major, collapsed dims `source_dims`: each equal to `output_dims`' or 1)
// into rows [first_row, end_row) of a row-major buffer of shape `output_dims`, a row being the last
// dimension. Elements are `element_size` bytes, copied as raw bytes. Writes only those rows, so
// disjoint row ranges may be filled from different threads.
void BroadcastRows(const void* source, int64_t element_size,
                   const std::vector<int64_t>& source_dims, const std::vector<int64_t>& output_dims,
                   int64_t first_row, int64_t end_row, void* destination);

// For shapes s0 and s1 (dims >= 0, checked by the caller) of the inputs of a broadcasting binary
// op, the axes of the output each input's gradient must be summed over: the axes where that input
// has (or is padded with) size 1 while the output does not, plus the axes where every side is 1.
// Both are empty when s0 == s1. InvalidArgument naming both shapes when they cannot broadcast.
StatusOr<std::pair<std::vector<int64_t>, std::vector<int64_t>>> BroadcastGradientAxes(
    const std::vector<int64_t>& s0, const std::vector<int64_t>& s1);

}  // namespace weft::kernels
