// Reduction ops: Sum, Mean, Max over a set of axes, and ArgMax along one axis. Axes may be
// negative (counted from the end); an axis outside [-rank, rank) is an error; repeated axes count
// once.
#include <vector>

#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

// input [d0..dn-1], reduction_indices (scalar or vector) -> the input without (or, with keep_dims,
// with size 1 at) the reduced axes.
Status ReductionShape(InferenceContext& context) {
  const PartialShape& input = context.input(0);
  const PartialShape& indices_shape = context.input(1);
  if (indices_shape.rank_known() && indices_shape.rank() > 1) {
    return context.Error("reduction_indices must be a scalar or vector, but has shape ",
                         indices_shape.DebugString());
  }
  bool keep_dims = false;
  WEFT_RETURN_IF_ERROR(context.GetAttr("keep_dims", &keep_dims));
  std::optional<std::vector<int64_t>> known_axes = context.ConstantIntVector(1);
  if (!known_axes.has_value()) {
    context.set_output(0, keep_dims && input.rank_known()
                              ? PartialShape::UnknownOfRank(input.rank())
                              : PartialShape::UnknownRank());
    return Status::OK();
  }
  const std::vector<int64_t>& axes = *known_axes;
  if (!input.rank_known()) {
    context.set_output(0, axes.empty() ? input : PartialShape::UnknownRank());
    return Status::OK();
  }
  const int rank = input.rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return context.Error("invalid reduction dimension ", axis, " for input of rank ", rank,
                           " (shape ", input.DebugString(), ")");
    }
    reduced[axis < 0 ? axis + rank : axis] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    if (!reduced[i]) {
      dims.push_back(input.dim(i));
    } else if (keep_dims) {
      dims.push_back(1);
    }
  }
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

// input [d0..dn-1], scalar dimension -> the input without that dimension.
Status ArgMaxShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRankAtLeast(0, 1));
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 0));
  const PartialShape& input = context.input(0);
  if (!input.rank_known()) {
    context.set_output(0, PartialShape::UnknownRank());
    return Status::OK();
  }
  const int rank = input.rank();
  std::optional<std::vector<int64_t>> known_axis = context.ConstantIntVector(1);
  if (!known_axis.has_value()) {
    context.set_output(0, PartialShape::UnknownOfRank(rank - 1));
    return Status::OK();
  }
  const std::vector<int64_t>& axis = *known_axis;
  if (axis.size() != 1) return context.Error("dimension must be a scalar");
  if (axis[0] < -rank || axis[0] >= rank) {
    return context.Error("dimension ", axis[0], " is out of range for input of rank ", rank,
                         " (shape ", input.DebugString(), ")");
  }
  std::vector<int64_t> dims = input.dims();
  dims.erase(dims.begin() + (axis[0] < 0 ? axis[0] + rank : axis[0]));
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

}  // namespace

void RegisterReductionOps(OpRegistry& registry) {
  struct Reduction {
    const char* name;
    const char* doc;
  };
  for (const Reduction& op :
       {Reduction{"Sum", "Sum of the input's elements over the axes in reduction_indices."},
        Reduction{"Mean", "Mean over the axes in reduction_indices (integers truncate)."},
        Reduction{"Max", "Maximum over the axes in reduction_indices (lowest if empty)."}}) {
    registry.RegisterOrDie(OpDefBuilder(op.name)
                               .Input("input: T")
                               .Input("reduction_indices: Tidx")
                               .HostMemory("reduction_indices")
                               .Output("output: T")
                               .Attr("keep_dims: bool = false")
                               .Attr("T: {float32, float64, int32, int64}")
                               .Attr("Tidx: {int32, int64} = int32")
                               .SetShapeFn(ReductionShape)
                               .Doc(op.doc));
  }
  registry.RegisterOrDie(OpDefBuilder("ArgMax")
                             .Input("input: T")
                             .Input("dimension: Tidx")
                             .HostMemory("dimension")
                             .Output("output: output_type")
                             .Attr("T: {float32, float64, int32, int64, uint8}")
                             .Attr("Tidx: {int32, int64} = int32")
                             .Attr("output_type: {int32, int64} = int64")
                             .SetShapeFn(ArgMaxShape)
                             .Doc("Index of the largest value along dimension (first on ties)."));
}

}  // namespace weft::ops
