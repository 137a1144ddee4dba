// Layer normalisation as one op and its gradient: FusedLayerNorm normalises each row of x over its
// last dimension C and applies a per-channel scale and offset,
//   y = (x - mean) * inverse_std * scale + offset,   inverse_std = 1 / sqrt(variance + epsilon)
// with the row's mean and (biased) variance, and keeps mean and inverse_std for the gradient.
// The reference composes this from a dozen element-wise ops and reductions; one pass over each
// row here instead of one per op.
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

// The rows of x: its shape without the last dimension.
PartialShape RowsOf(const PartialShape& x) {
  if (!x.rank_known()) return PartialShape::UnknownRank();
  std::vector<int64_t> dims = x.dims();
  dims.pop_back();
  return PartialShape(std::move(dims));
}

// `vector` (scale or offset, input `i`) has x's last dimension.
Status CheckChannels(InferenceContext& context, const PartialShape& x, int i,
                     std::string_view what) {
  WEFT_RETURN_IF_ERROR(context.WithRank(i, 1));
  const PartialShape& vector = context.input(i);
  if (!x.rank_known() || !vector.rank_known()) return Status::OK();
  return context.CheckDimsEqual(x.dim(x.rank() - 1), vector.dim(0),
                                StrCat("last dimension of x and size of ", what));
}

// x [..., C], scale [C], offset [C] -> y [..., C], mean [...], inverse_std [...].
Status FusedLayerNormShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRankAtLeast(0, 1));
  const PartialShape& x = context.input(0);
  WEFT_RETURN_IF_ERROR(CheckChannels(context, x, 1, "scale"));
  WEFT_RETURN_IF_ERROR(CheckChannels(context, x, 2, "offset"));
  float epsilon = 0;
  WEFT_RETURN_IF_ERROR(context.GetAttr("epsilon", &epsilon));
  if (!(epsilon >= 0)) return context.Error("epsilon must be >= 0, but is ", epsilon);
  context.set_output(0, x);
  context.set_output(1, RowsOf(x));
  context.set_output(2, RowsOf(x));
  return Status::OK();
}

// y_backprop, x [..., C], scale [C], mean, inverse_std [...] -> x_backprop [..., C],
// scale_backprop [C], offset_backprop [C].
Status FusedLayerNormGradShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRankAtLeast(1, 1));
  StatusOr<PartialShape> x = context.input(1).Merge(context.input(0));
  if (!x.ok()) {
    return context.Error("y_backprop ", context.input(0).DebugString(),
                         " must have the shape of x ", context.input(1).DebugString());
  }
  WEFT_RETURN_IF_ERROR(CheckChannels(context, *x, 2, "scale"));
  const PartialShape channels =
      x->rank_known() ? PartialShape({x->dim(x->rank() - 1)}) : PartialShape::UnknownOfRank(1);
  context.set_output(0, *x);
  context.set_output(1, channels);
  context.set_output(2, channels);
  return Status::OK();
}

}  // namespace

void RegisterNormalizationOps(OpRegistry& registry) {
  registry.RegisterOrDie(
      OpDefBuilder("FusedLayerNorm")
          .Input("x: T")
          .Input("scale: T")
          .Input("offset: T")
          .Output("y: T")
          .Output("mean: T")
          .Output("inverse_std: T")
          .Attr("T: {float32, float64}")
          .Attr("epsilon: float = 0.001")
          .SetShapeFn(FusedLayerNormShape)
          .Doc("Normalises each row of x over its last dimension to mean 0 and variance 1, then "
               "multiplies by scale and adds offset; mean and inverse_std (1 / sqrt(variance + "
               "epsilon)) are each row's, kept for the gradient."));
  // What graph/fuse_ops.h makes of a float32 FusedLayerNorm whose y only Casts to bfloat16 read
  // (the mixed_bfloat16 policy's normalisation before its products).
  registry.RegisterOrDie(OpDefBuilder("_FusedLayerNorm")
                             .Input("x: float32")
                             .Input("scale: float32")
                             .Input("offset: float32")
                             .Output("y: bfloat16")
                             .Output("mean: float32")
                             .Output("inverse_std: float32")
                             .Attr("epsilon: float = 0.001")
                             .SetIsInternal()
                             .SetShapeFn(FusedLayerNormShape)
                             .Doc("FusedLayerNorm with y rounded to bfloat16 as it is written."));
  registry.RegisterOrDie(
      OpDefBuilder("FusedLayerNormGrad")
          .Input("y_backprop: T")
          .Input("x: T")
          .Input("scale: T")
          .Input("mean: T")
          .Input("inverse_std: T")
          .Output("x_backprop: T")
          .Output("scale_backprop: T")
          .Output("offset_backprop: T")
          .Attr("T: {float32, float64}")
          .SetIsInternal()
          .SetShapeFn(FusedLayerNormGradShape)
          .Doc("The gradients of FusedLayerNorm's x, scale and offset given the gradient of y and "
               "the forward op's mean and inverse_std."));
}

}  // namespace weft::ops
