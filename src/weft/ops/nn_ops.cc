// Neural-network ops that work row by row or element by element: BiasAdd and its gradient, the
// activations (Relu, Sigmoid, Tanh, Gelu with their gradients; Softplus), Softmax, LogSoftmax
// (over the last dimension of any rank) and sparse softmax cross-entropy. The windowed ops
// (Conv2D, MaxPool, AvgPool and their gradients) are in conv_ops.cc, fused attention in
// attention_ops.cc.
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {

void RegisterConvOps(OpRegistry& registry);           // conv_ops.cc
void RegisterAttentionOps(OpRegistry& registry);      // attention_ops.cc
void RegisterNormalizationOps(OpRegistry& registry);  // normalization_ops.cc

namespace {

// Only NHWC is implemented; NCHW is accepted by the signature so that the message is clear.
Status CheckNhwc(const InferenceContext& context) {
  std::string data_format;
  WEFT_RETURN_IF_ERROR(context.GetAttr("data_format", &data_format));
  if (data_format != "NHWC") {
    return context.Error("data_format ", data_format, " is not supported; use NHWC");
  }
  return Status::OK();
}

// value [..., C], bias [C] -> [..., C].
Status BiasAddShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(CheckNhwc(context));
  WEFT_RETURN_IF_ERROR(context.WithRankAtLeast(0, 2));
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 1));
  const PartialShape& value = context.input(0);
  const PartialShape& bias = context.input(1);
  if (!value.rank_known()) {
    context.set_output(0, value);
    return Status::OK();
  }
  std::vector<int64_t> dims = value.dims();
  if (bias.rank_known()) {
    int64_t channels = dims.back();
    WEFT_RETURN_IF_ERROR(
        context.CheckDimsEqual(channels, bias.dim(0), "last dimension of value and size of bias"));
    if (channels < 0) dims.back() = bias.dim(0);
  }
  context.set_output(0, PartialShape(std::move(dims)));
  return Status::OK();
}

// out_backprop [..., C] -> [C].
Status BiasAddGradShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(CheckNhwc(context));
  WEFT_RETURN_IF_ERROR(context.WithRankAtLeast(0, 2));
  const PartialShape& grad = context.input(0);
  context.set_output(0, grad.rank_known() ? PartialShape({grad.dim(grad.rank() - 1)})
                                          : PartialShape::UnknownOfRank(1));
  return Status::OK();
}

// out_backprop [..., C] (and features of its shape, when given) -> backprop [..., C] and
// bias_backprop [C].
Status FusedBiasAddGradShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRankAtLeast(0, 2));
  PartialShape shape = context.input(0);
  if (context.num_inputs() > 1) {
    StatusOr<PartialShape> merged = shape.Merge(context.input(1));
    if (!merged.ok()) {
      return context.Error("out_backprop and features must have the same shape, but are ",
                           shape.DebugString(), " and ", context.input(1).DebugString());
    }
    shape = std::move(merged).value();
  }
  context.set_output(1, shape.rank_known() ? PartialShape({shape.dim(shape.rank() - 1)})
                                           : PartialShape::UnknownOfRank(1));
  context.set_output(0, std::move(shape));
  return Status::OK();
}

// Both inputs must have the same shape, which is the output's.
Status MergeBothInputsShape(InferenceContext& context) {
  StatusOr<PartialShape> merged = context.input(0).Merge(context.input(1));
  if (!merged.ok()) {
    return context.Error("inputs must have the same shape, but are ",
                         context.input(0).DebugString(), " and ", context.input(1).DebugString());
  }
  context.set_output(0, std::move(merged).value());
  return Status::OK();
}

Status SoftmaxShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRankAtLeast(0, 1));
  context.set_output(0, context.input(0));
  return Status::OK();
}

// features [batch, classes], labels [batch] -> loss [batch], backprop [batch, classes].
Status SparseSoftmaxCrossEntropyShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(0, 2));
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 1));
  const PartialShape& features = context.input(0);
  const PartialShape& labels = context.input(1);
  int64_t batch = features.rank_known() ? features.dim(0) : PartialShape::kUnknownDim;
  int64_t classes = features.rank_known() ? features.dim(1) : PartialShape::kUnknownDim;
  if (labels.rank_known()) {
    WEFT_RETURN_IF_ERROR(
        context.CheckDimsEqual(batch, labels.dim(0), "batch sizes of features and labels"));
    if (batch < 0) batch = labels.dim(0);
  }
  context.set_output(0, PartialShape({batch}));
  context.set_output(1, PartialShape({batch, classes}));
  return Status::OK();
}

void RegisterActivationOps(OpRegistry& registry) {
  registry.RegisterOrDie(OpDefBuilder("Relu")
                             .Input("features: T")
                             .Output("activations: T")
                             .Attr("T: {float32, float64, int32, int64}")
                             .SetShapeFn(shape_fn::UnchangedShape)
                             .Doc("max(features, 0), element-wise."));
  registry.RegisterOrDie(OpDefBuilder("ReluGrad")
                             .Input("gradients: T")
                             .Input("features: T")
                             .Output("backprops: T")
                             .Attr("T: {float32, float64, int32, int64}")
                             .SetIsInternal()
                             .SetShapeFn(MergeBothInputsShape)
                             .Doc("gradients where features > 0, else 0."));
  registry.RegisterOrDie(OpDefBuilder("Sigmoid")
                             .Input("x: T")
                             .Output("y: T")
                             .Attr("T: {float32, float64}")
                             .SetShapeFn(shape_fn::UnchangedShape)
                             .Doc("1 / (1 + exp(-x)), element-wise."));
  registry.RegisterOrDie(OpDefBuilder("SigmoidGrad")
                             .Input("y: T")
                             .Input("dy: T")
                             .Output("z: T")
                             .Attr("T: {float32, float64}")
                             .SetIsInternal()
                             .SetShapeFn(MergeBothInputsShape)
                             .Doc("dy * y * (1 - y): the gradient of Sigmoid given its output y."));
  registry.RegisterOrDie(OpDefBuilder("Tanh")
                             .Input("x: T")
                             .Output("y: T")
                             .Attr("T: {float32, float64}")
                             .SetShapeFn(shape_fn::UnchangedShape)
                             .Doc("Hyperbolic tangent, element-wise."));
  registry.RegisterOrDie(OpDefBuilder("TanhGrad")
                             .Input("y: T")
                             .Input("dy: T")
                             .Output("z: T")
                             .Attr("T: {float32, float64}")
                             .SetIsInternal()
                             .SetShapeFn(MergeBothInputsShape)
                             .Doc("dy * (1 - y * y): the gradient of Tanh given its output y."));
  registry.RegisterOrDie(
      OpDefBuilder("Gelu")
          .Input("features: T")
          .Output("activations: T")
          .Attr("approximate: bool = false")
          .Attr("T: {float32, float64}")
          .SetShapeFn(shape_fn::UnchangedShape)
          .Doc(
              "x * Phi(x), element-wise, Phi the standard normal CDF: 0.5 x (1 + erf(x / "
              "sqrt(2))), or with approximate 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."));
  // What graph/fuse_ops.h makes of a Gelu whose output only a Cast to bfloat16 reads (the
  // mixed_bfloat16 policy's MLP, whose next product takes bfloat16).
  registry.RegisterOrDie(OpDefBuilder("_FusedGelu")
                             .Input("features: float32")
                             .Output("activations: bfloat16")
                             .Attr("approximate: bool = false")
                             .SetIsInternal()
                             .SetShapeFn(shape_fn::UnchangedShape)
                             .Doc("Gelu(features) rounded to bfloat16, in one pass."));
  registry.RegisterOrDie(
      OpDefBuilder("GeluGrad")
          .Input("gradients: T")
          .Input("features: T")
          .Output("backprops: T")
          .Attr("approximate: bool = false")
          .Attr("T: {float32, float64}")
          .SetIsInternal()
          .SetShapeFn(MergeBothInputsShape)
          .Doc("gradients * Gelu'(features), Gelu' under the same approximate."));
  registry.RegisterOrDie(OpDefBuilder("Softplus")
                             .Input("features: T")
                             .Output("activations: T")
                             .Attr("T: {float32, float64}")
                             .SetShapeFn(shape_fn::UnchangedShape)
                             .Doc("log(1 + exp(features)), element-wise, without overflow."));
}

void RegisterBiasAndSoftmaxOps(OpRegistry& registry) {
  registry.RegisterOrDie(OpDefBuilder("BiasAdd")
                             .Input("value: T")
                             .Input("bias: T")
                             .Output("output: T")
                             .Attr("T: {float32, float64, int32, int64}")
                             .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
                             .SetShapeFn(BiasAddShape)
                             .Doc("Adds bias [C] to every row of value [..., C]."));
  registry.RegisterOrDie(OpDefBuilder("BiasAddGrad")
                             .Input("out_backprop: T")
                             .Output("output: T")
                             .Attr("T: {float32, float64, int32, int64}")
                             .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
                             .SetIsInternal()
                             .SetShapeFn(BiasAddGradShape)
                             .Doc("Sums out_backprop [..., C] over all but the last dim."));
  // What graph/fuse_ops.h makes of a float32 gradient read by both a BiasAddGrad and a Cast to
  // bfloat16 (a mixed_bfloat16 layer's bias and product gradients), with the GeluGrad that
  // produced it when nothing else reads that.
  registry.RegisterOrDie(
      OpDefBuilder("_FusedBiasAddGrad")
          .Input("out_backprop: float32")
          .Input("features: num_features * float32")
          .Output("backprop: bfloat16")
          .Output("bias_backprop: float32")
          .Attr("num_features: int >= 0 = 0")
          .Attr("activation: {'None', 'Gelu'} = 'None'")
          .Attr("approximate: bool = false")
          .SetIsInternal()
          .SetShapeFn(FusedBiasAddGradShape)
          .Doc("g = out_backprop, or with activation Gelu (and one features input) out_backprop * "
               "Gelu'(features) under approximate; backprop is g rounded to bfloat16 and "
               "bias_backprop g summed over all but the last dimension, in one pass."));
  registry.RegisterOrDie(OpDefBuilder("Softmax")
                             .Input("logits: T")
                             .Output("softmax: T")
                             .Attr("T: {float32, float64}")
                             .SetShapeFn(SoftmaxShape)
                             .Doc("exp(logits) / sum(exp(logits)) over the last dimension."));
  registry.RegisterOrDie(OpDefBuilder("LogSoftmax")
                             .Input("logits: T")
                             .Output("logsoftmax: T")
                             .Attr("T: {float32, float64}")
                             .SetShapeFn(SoftmaxShape)
                             .Doc("logits - log(sum(exp(logits))) over the last dimension."));
  registry.RegisterOrDie(
      OpDefBuilder("SparseSoftmaxCrossEntropyWithLogits")
          .Input("features: T")
          .Input("labels: Tlabels")
          .Output("loss: T")
          .Output("backprop: T")
          .Attr("T: {float32, float64}")
          .Attr("Tlabels: {int32, int64} = int64")
          .SetShapeFn(SparseSoftmaxCrossEntropyShape)
          .Doc("Per-row cross-entropy of softmax(features) against class labels, and its "
               "gradient with respect to features."));
}

}  // namespace

void RegisterNnOps(OpRegistry& registry) {
  RegisterActivationOps(registry);
  RegisterBiasAndSoftmaxOps(registry);
  RegisterConvOps(registry);
  RegisterAttentionOps(registry);
  RegisterNormalizationOps(registry);
}

}  // namespace weft::ops
