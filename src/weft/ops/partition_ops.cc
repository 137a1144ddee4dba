// Array ops, part 4: what a lookup across the shards of a table is made of (the reference's
// embedding_lookup): DynamicPartition splits the rows of data by a partition number per row,
// DynamicStitch puts rows back at the positions their indices name, and Range numbers positions.
// Values (partition numbers, indices) are checked by the kernels: only shapes are known here.
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

// data [P..., R...], partitions [P...] -> num_partitions outputs [?, R...].
Status DynamicPartitionShape(InferenceContext& context) {
  int64_t count = 0;
  WEFT_RETURN_IF_ERROR(context.GetAttr("num_partitions", &count));
  const PartialShape& data = context.input(0);
  const PartialShape& partitions = context.input(1);
  PartialShape output = PartialShape::UnknownRank();
  if (data.rank_known() && partitions.rank_known()) {
    if (partitions.rank() > data.rank()) {
      return context.Error("partitions of shape ", partitions.DebugString(),
                           " must be a prefix of data's shape ", data.DebugString());
    }
    for (int d = 0; d < partitions.rank(); ++d) {
      WEFT_RETURN_IF_ERROR(
          context.CheckDimsEqual(partitions.dim(d), data.dim(d), "partitions' and data's dims"));
    }
    std::vector<int64_t> dims = {PartialShape::kUnknownDim};
    dims.insert(dims.end(), data.dims().begin() + partitions.rank(), data.dims().end());
    output = PartialShape(std::move(dims));
  }
  for (int64_t i = 0; i < count; ++i) context.set_output(static_cast<int>(i), output);
  return Status::OK();
}

// indices N x [I...], data N x [I..., R...] -> [?, R...] (R from the first pair whose ranks are
// known).
Status DynamicStitchShape(InferenceContext& context) {
  const int n = context.num_inputs() / 2;
  for (int i = 0; i < n; ++i) {
    const PartialShape& indices = context.input(i);
    const PartialShape& data = context.input(n + i);
    if (!indices.rank_known() || !data.rank_known()) continue;
    if (indices.rank() > data.rank()) {
      return context.Error("indices ", i, " of shape ", indices.DebugString(),
                           " must be a prefix of data ", i, "'s shape ", data.DebugString());
    }
    std::vector<int64_t> dims = {PartialShape::kUnknownDim};
    dims.insert(dims.end(), data.dims().begin() + indices.rank(), data.dims().end());
    context.set_output(0, PartialShape(std::move(dims)));
    return Status::OK();
  }
  context.set_output(0, PartialShape::UnknownRank());
  return Status::OK();
}

Status RangeShape(InferenceContext& context) {
  for (int i = 0; i < 3; ++i) {
    if (!context.WithRank(i, 0).ok()) {
      return context.Error("input ", i, " (start, limit, delta) must be a scalar, but has shape ",
                           context.input(i).DebugString());
    }
  }
  context.set_output(0, PartialShape::UnknownOfRank(1));
  return Status::OK();
}

}  // namespace

void RegisterPartitionOps(OpRegistry& registry) {
  registry.RegisterOrDie(OpDefBuilder("DynamicPartition")
                             .Input("data: T")
                             .Input("partitions: int32")
                             .Output("outputs: num_partitions * T")
                             .Attr("num_partitions: int >= 1")
                             .Attr("T: type")
                             .SetShapeFn(DynamicPartitionShape)
                             .Doc("outputs[i] = the rows of data whose partition is i, in order "
                                  "(partitions' shape is a prefix of data's)."));
  registry.RegisterOrDie(OpDefBuilder("DynamicStitch")
                             .Input("indices: N * int32")
                             .Input("data: N * T")
                             .Output("merged: T")
                             .Attr("N: int >= 1")
                             .Attr("T: type")
                             .SetShapeFn(DynamicStitchShape)
                             .Doc("merged[indices[m][i]] = data[m][i]; later pairs win; rows no "
                                  "index names are zero; merged has max(index) + 1 rows."));
  registry.RegisterOrDie(OpDefBuilder("Range")
                             .Input("start: Tidx")
                             .Input("limit: Tidx")
                             .Input("delta: Tidx")
                             .Output("output: Tidx")
                             .Attr("Tidx: {int32, int64}")
                             .SetShapeFn(RangeShape)
                             .Doc("start, start + delta, ... up to but not including limit."));
}

}  // namespace weft::ops
