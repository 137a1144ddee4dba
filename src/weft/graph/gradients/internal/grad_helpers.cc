// Shared building blocks of the gradient functions; see grad_helpers.h.
#include "weft/graph/gradients/internal/grad_helpers.h"

#include "weft/framework/attr_value_util.h"

namespace weft::internal {
namespace {

// `axis` in [0, rank), given a value in [-rank, rank) (checked by the forward op's shape fn).
int64_t NormalizeAxis(int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

// An int32 [rank, 1] column holding i + offset in row i.
Output IotaColumn(const Scope& scope, int rank, int64_t offset) {
  std::vector<int32_t> values(rank);
  for (int i = 0; i < rank; ++i) values[i] = static_cast<int32_t>(i + offset);
  return ops::Const(scope, Tensor::FromVector(values, TensorShape({rank, 1})));
}

}  // namespace

Output InputOf(const Node* op, int index) {
  const Edge* edge = op->input_edge(index);
  return edge == nullptr ? Output() : Output(edge->src, edge->src_output);
}

std::optional<std::vector<int64_t>> ConstantInts(const Output& t) {
  if (!t || t.node()->type_string() != "Const") return std::nullopt;
  Tensor value;
  if (!GetNodeAttr(t.node()->def(), "value", &value).ok()) return std::nullopt;
  std::vector<int64_t> values;
  if (value.dtype() == DataType::kInt32) {
    for (int32_t v : value.flat<int32_t>()) values.push_back(v);
  } else if (value.dtype() == DataType::kInt64) {
    for (int64_t v : value.flat<int64_t>()) values.push_back(v);
  } else {
    return std::nullopt;
  }
  return values;
}

Tensor ScalarOf(DataType dtype, double value) {
  switch (dtype) {
    case DataType::kFloat:
      return Tensor::Scalar(static_cast<float>(value));
    case DataType::kInt32:
      return Tensor::Scalar(static_cast<int32_t>(value));
    case DataType::kInt64:
      return Tensor::Scalar(static_cast<int64_t>(value));
    case DataType::kBFloat16:
      return Tensor::Scalar(bfloat16(value));
    default:
      return Tensor::Scalar(value);
  }
}

Output IntVector(const Scope& scope, const std::vector<int64_t>& values) {
  return ops::Const(scope, Tensor::FromVector(std::vector<int32_t>(values.begin(), values.end())));
}

Output ToInt32(const Scope& scope, const Output& ints) {
  return ints.dtype() == DataType::kInt32 ? ints : ops::Cast(scope, ints, DataType::kInt32);
}

Output ShapeOf(const Scope& scope, const Output& t) {
  const PartialShape shape = t.shape();
  return shape.IsFullyDefined() ? IntVector(scope, shape.dims()) : ops::Shape(scope, t);
}

Output SumToShapeOf(const Scope& scope, const Output& grad, const Output& x) {
  const PartialShape xs = x.shape(), gs = grad.shape();
  if (xs.IsFullyDefined() && gs.IsFullyDefined() && xs.rank() <= gs.rank()) {
    const int lead = gs.rank() - xs.rank();
    std::vector<int64_t> axes, kept;
    for (int i = 0; i < gs.rank(); ++i) {
      if (i < lead || (xs.dim(i - lead) == 1 && gs.dim(i) != 1)) {
        axes.push_back(i);
      } else {
        kept.push_back(gs.dim(i));
      }
    }
    Output summed = axes.empty() ? grad : ops::Sum(scope, grad, IntVector(scope, axes));
    return kept == xs.dims() ? summed : ops::Reshape(scope, summed, IntVector(scope, xs.dims()));
  }
  Output x_shape = ops::Shape(scope, x);
  Output x_axes = ops::BroadcastGradientArgs(scope, x_shape, ShapeOf(scope, grad)).first;
  return ops::Reshape(scope, ops::Sum(scope, grad, x_axes), x_shape);
}

Output AxisMask(const Scope& scope, const Output& axes, int rank) {
  if (std::optional<std::vector<int64_t>> values = ConstantInts(axes)) {
    std::vector<int64_t> mask(rank, 0);
    for (int64_t axis : *values) mask[NormalizeAxis(axis, rank)] = 1;
    return IntVector(scope, mask);
  }
  // hits[i, j] = (axes[j] == i) + (axes[j] == i - rank); a row with any hit is reduced.
  Output row = ops::Reshape(scope, ToInt32(scope, axes), IntVector(scope, {1, -1}));
  Output hits = ops::Add(
      scope, ops::Cast(scope, ops::Equal(scope, IotaColumn(scope, rank, 0), row), DataType::kInt32),
      ops::Cast(scope, ops::Equal(scope, IotaColumn(scope, rank, -rank), row), DataType::kInt32));
  Output count = ops::Sum(scope, hits, IntVector(scope, {1}));
  return ops::Cast(scope, ops::Cast(scope, count, DataType::kBool), DataType::kInt32);
}

StatusOr<Output> KeptDimsShape(const Scope& scope, const Output& input, const Output& axes) {
  const PartialShape shape = input.shape();
  if (!shape.rank_known()) {
    return Unimplemented("the gradient of a reduction needs the rank of its input '", input.name(),
                         "'");
  }
  const int rank = shape.rank();
  std::optional<std::vector<int64_t>> values = ConstantInts(axes);
  if (values) {  // a Const when every dim that is not reduced is known
    std::vector<int64_t> dims = shape.dims();
    for (int64_t axis : *values) dims[NormalizeAxis(axis, rank)] = 1;
    if (PartialShape(dims).IsFullyDefined()) return IntVector(scope, dims);
  }
  // shape * (1 - mask) + mask
  Output mask = AxisMask(scope, axes, rank);
  Output keep;
  if (values) {
    std::vector<int64_t> keep_values(rank, 1);
    for (int64_t axis : *values) keep_values[NormalizeAxis(axis, rank)] = 0;
    keep = IntVector(scope, keep_values);
  } else {
    keep = ops::Sub(scope, 1, mask);
  }
  return ops::Add(scope, ops::Mul(scope, ops::Shape(scope, input), keep), mask);
}

}  // namespace weft::internal
