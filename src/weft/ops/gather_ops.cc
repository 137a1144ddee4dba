// Array ops, part 3: indexing by a tensor of indices — GatherV2 (rows of params picked by index)
// and its counterpart UnsortedSegmentSum (rows of data added into the segments their ids name).
// Index values are checked by the kernels, not here: only their shapes are known at graph time.
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

// params [P0..Pa..Pn], indices [I...], axis a -> [P0..P(a-1), I..., P(a+1)..Pn]. Without a
// constant axis only the output rank is known (when both input ranks are).
Status GatherV2Shape(InferenceContext& context) {
  int64_t batch_dims = 0;
  WEFT_RETURN_IF_ERROR(context.GetAttr("batch_dims", &batch_dims));
  if (batch_dims != 0) {
    return context.Error("batch_dims must be 0 (batched gathers are not supported), but is ",
                         batch_dims);
  }
  WEFT_RETURN_IF_ERROR(context.WithRankAtLeast(0, 1));
  WEFT_RETURN_IF_ERROR(context.WithRank(2, 0));
  const PartialShape& params = context.input(0);
  const PartialShape& indices = context.input(1);
  std::optional<std::vector<int64_t>> axis = context.ConstantIntVector(2);
  if (!params.rank_known() || !indices.rank_known()) {
    context.set_output(0, PartialShape::UnknownRank());
    return Status::OK();
  }
  const int rank = params.rank();
  if (!axis.has_value() || axis->size() != 1) {
    context.set_output(0, PartialShape::UnknownOfRank(rank + indices.rank() - 1));
    return Status::OK();
  }
  int64_t a = (*axis)[0];
  if (a < -rank || a >= rank) {
    return context.Error("axis ", a, " is out of range [", -rank, ", ", rank,
                         ") for params of shape ", params.DebugString());
  }
  if (a < 0) a += rank;
  std::vector<int64_t> dims(params.dims().begin(), params.dims().begin() + a);
  dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
  dims.insert(dims.end(), params.dims().begin() + a + 1, params.dims().end());
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

// data [S..., D...], segment_ids [S...], num_segments (scalar) -> [num_segments, D...].
Status UnsortedSegmentSumShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(2, 0));
  int64_t segments = PartialShape::kUnknownDim;
  if (std::optional<std::vector<int64_t>> n = context.ConstantIntVector(2); n && n->size() == 1) {
    segments = (*n)[0];
    if (segments < 0) return context.Error("num_segments must be non-negative, but is ", segments);
  }
  const PartialShape& data = context.input(0);
  const PartialShape& ids = context.input(1);
  if (!data.rank_known() || !ids.rank_known()) {
    context.set_output(0, PartialShape::UnknownRank());
    return Status::OK();
  }
  bool prefix = ids.rank() <= data.rank();
  for (int i = 0; prefix && i < ids.rank(); ++i) {
    prefix = ids.dim(i) < 0 || data.dim(i) < 0 || ids.dim(i) == data.dim(i);
  }
  if (!prefix) {
    return context.Error("segment_ids shape ", ids.DebugString(),
                         " must be a prefix of data shape ", data.DebugString());
  }
  std::vector<int64_t> dims = {segments};
  dims.insert(dims.end(), data.dims().begin() + ids.rank(), data.dims().end());
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

}  // namespace

void RegisterGatherOps(OpRegistry& registry) {
  registry.RegisterOrDie(
      OpDefBuilder("GatherV2")
          .Input("params: Tparams")
          .Input("indices: Tindices")
          .Input("axis: Taxis")
          .HostMemory("axis")
          .Output("output: Tparams")
          .Attr("batch_dims: int = 0")
          .Attr("Tparams: type")
          .Attr("Tindices: {int32, int64}")
          .Attr("Taxis: {int32, int64}")
          .SetShapeFn(GatherV2Shape)
          .Doc("The slices of params at `indices` along `axis`; an index outside [0, dim) is an "
               "error."));
  registry.RegisterOrDie(
      OpDefBuilder("UnsortedSegmentSum")
          .Input("data: T")
          .Input("segment_ids: Tindices")
          .Input("num_segments: Tnumsegments")
          .HostMemory("num_segments")
          .Output("output: T")
          .Attr("T: {float32, float64, int32, int64}")
          .Attr("Tindices: {int32, int64}")
          .Attr("Tnumsegments: {int32, int64} = int32")
          .SetShapeFn(UnsortedSegmentSumShape)
          .Doc("output[s] is the sum of the slices data[i...] with segment_ids[i...] == s; "
               "negative ids are dropped, ids >= num_segments are an error."));
}

}  // namespace weft::ops
