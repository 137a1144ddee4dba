// Building blocks shared by the gradient functions (array_grad.cc, math_grad.cc, nn_grad.cc):
// reading a forward node's inputs and constant inputs, int32 shape vectors that are Consts when
// shapes are known statically and Shape nodes otherwise, summing a broadcast gradient back to an
// input's shape, and the "input shape with 1 at the reduced axes" of a reduction. Every helper
// builds in the scope it is given and, like the ops:: builders, records errors in that scope.
// Stateless; not thread-safe (like Scope).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "weft/graph/builder/ops.h"

namespace weft::internal {

// The tensor feeding input `index` of `op` (empty when the input has no edge).
Output InputOf(const Node* op, int index);

// The values of `t` when it is a Const of int32 or int64, widened to int64.
std::optional<std::vector<int64_t>> ConstantInts(const Output& t);

// A scalar of `dtype` (float32, int32 or int64; float64 for any other dtype) holding `value`.
Tensor ScalarOf(DataType dtype, double value);

// An int32 vector constant.
Output IntVector(const Scope& scope, const std::vector<int64_t>& values);

// `ints` as int32 (a Cast only when it is int64).
Output ToInt32(const Scope& scope, const Output& ints);

// The shape of `t` as an int32 vector: a Const when the inferred shape is fully defined, else a
// Shape node.
Output ShapeOf(const Scope& scope, const Output& t);

// Sums `grad`, whose shape is `x`'s broadcast against something, back to the shape of `x`:
// statically chosen axes when both shapes are known, else BroadcastGradientArgs + Sum + Reshape.
// Returns `grad` itself when no reduction is needed.
Output SumToShapeOf(const Scope& scope, const Output& grad, const Output& x);

// For an input of rank `rank` (known) and reduction axes `axes` (scalar or vector, int32 or
// int64, negative counted from the end): an int32 [rank] vector with 1 at every reduced axis and
// 0 elsewhere. A Const when `axes` is.
Output AxisMask(const Scope& scope, const Output& axes, int rank);

// The shape of `input` with 1 at the reduced axes (the shape of a keep_dims reduction): a Const
// when the axes and the dims not reduced are known. Unimplemented when the input rank is unknown.
StatusOr<Output> KeptDimsShape(const Scope& scope, const Output& input, const Output& axes);

}  // namespace weft::internal
