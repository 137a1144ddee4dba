// Windowed ops over NHWC images: Conv2D with its two backprops, MaxPool and AvgPool with their
// gradients. Their shape functions share the attr checks (strides, ksize, dilations, data_format)
// and the output-size rule for SAME and VALID padding, which follows the reference system exactly:
//   SAME:  out = ceil(in / stride)
//   VALID: out = (in - window + stride) / stride (truncating), an error when negative.
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

constexpr int64_t kUnknown = PartialShape::kUnknownDim;

// `shape` when its rank is known (it was checked to be 4), else four unknown dims.
PartialShape AsRank4(const PartialShape& shape) {
  return shape.rank_known() ? shape : PartialShape::UnknownOfRank(4);
}

// `shape` with dim `i` set to `value` where it is unknown.
PartialShape FillUnknownDim(const PartialShape& shape, int i, int64_t value) {
  std::vector<int64_t> dims = shape.dims();
  if (dims[i] < 0) dims[i] = value;
  return PartialShape(std::move(dims));
}

// Reads a list(int) attr of 4 positive values with values[0] == values[3] == 1 (no windowing over
// the batch or the channels).
Status GetWindowAttr(const InferenceContext& context, std::string_view name,
                     std::vector<int64_t>* values) {
  WEFT_RETURN_IF_ERROR(context.GetAttr(name, values));
  if (values->size() != 4) {
    return context.Error(name, " must have 4 elements, but has ", values->size());
  }
  for (int64_t v : *values) {
    if (v <= 0) {
      return context.Error(name, " must be positive, but is [", StrJoin(*values, ","), "]");
    }
  }
  if ((*values)[0] != 1 || (*values)[3] != 1) {
    return context.Error(name, " must be 1 in the batch and channel dimensions, but is [",
                         StrJoin(*values, ","), "]");
  }
  return Status::OK();
}

Status CheckNhwc(const InferenceContext& context) {
  std::string data_format;
  WEFT_RETURN_IF_ERROR(context.GetAttr("data_format", &data_format));
  if (data_format != "NHWC") {
    return context.Error("data_format ", data_format, " is not supported; use NHWC");
  }
  return Status::OK();
}

// One spatial output size; unknown when `in` is, or for VALID when `window` is.
StatusOr<int64_t> WindowedOutputSize(const InferenceContext& context, int64_t in, int64_t window,
                                     int64_t stride, const std::string& padding) {
  if (in < 0) return kUnknown;
  if (padding == "SAME") return (in + stride - 1) / stride;  // independent of the window
  if (window < 0) return kUnknown;
  int64_t out = (in - window + stride) / stride;
  if (out < 0) {
    return context.Error("computed output size would be negative: ", out, " (input size ", in,
                         ", window ", window, ", stride ", stride, ")");
  }
  return out;
}

// The Conv2D output shape for `input` [N,H,W,Cin] and `filter` [KH,KW,Cin,Cout], both rank 4 or
// unknown rank, checking the attrs and that the channel counts agree.
StatusOr<PartialShape> ConvOutputShape(const InferenceContext& context,
                                       const PartialShape& input_shape,
                                       const PartialShape& filter_shape) {
  WEFT_RETURN_IF_ERROR(CheckNhwc(context));
  std::vector<int64_t> strides, dilations;
  WEFT_RETURN_IF_ERROR(GetWindowAttr(context, "strides", &strides));
  WEFT_RETURN_IF_ERROR(context.GetAttr("dilations", &dilations));
  if (dilations != std::vector<int64_t>{1, 1, 1, 1}) {
    return context.Error("dilations must be [1,1,1,1] (dilated convolution is not supported), ",
                         "but are [", StrJoin(dilations, ","), "]");
  }
  std::string padding;
  WEFT_RETURN_IF_ERROR(context.GetAttr("padding", &padding));
  PartialShape input = AsRank4(input_shape), filter = AsRank4(filter_shape);
  if (filter.dim(0) == 0 || filter.dim(1) == 0) {
    return context.Error("filter height and width must be positive, but filter has shape ",
                         filter.DebugString());
  }
  WEFT_RETURN_IF_ERROR(
      context.CheckDimsEqual(input.dim(3), filter.dim(2), "input depth and filter in_channels"));
  WEFT_ASSIGN_OR_RETURN(
      int64_t rows, WindowedOutputSize(context, input.dim(1), filter.dim(0), strides[1], padding));
  WEFT_ASSIGN_OR_RETURN(
      int64_t cols, WindowedOutputSize(context, input.dim(2), filter.dim(1), strides[2], padding));
  return PartialShape({input.dim(0), rows, cols, filter.dim(3)});
}

// A shape given as a constant int32 [4] input (input_sizes, filter_sizes): known dims when the
// value is known, else four unknown dims.
StatusOr<PartialShape> ShapeFromSizesInput(const InferenceContext& context, int index) {
  WEFT_RETURN_IF_ERROR(context.WithRank(index, 1));
  const PartialShape& sizes_shape = context.input(index);
  if (sizes_shape.rank_known() && sizes_shape.dim(0) >= 0 && sizes_shape.dim(0) != 4) {
    return context.Error("input ", index, " must hold 4 sizes, but has shape ",
                         sizes_shape.DebugString());
  }
  const Tensor* sizes = context.input_tensor(index);
  if (sizes == nullptr || sizes->NumElements() != 4) return PartialShape::UnknownOfRank(4);
  std::vector<int64_t> dims(sizes->data<int32_t>(), sizes->data<int32_t>() + 4);
  for (int64_t d : dims) {
    if (d < 0) {
      return context.Error("input ", index, " holds a negative size: [", StrJoin(dims, ","), "]");
    }
  }
  return PartialShape(std::move(dims));
}

// Merges the computed out_backprop shape with the given one, failing with both shapes named.
Status CheckOutBackprop(const InferenceContext& context, const PartialShape& expected, int index) {
  PartialShape given = AsRank4(context.input(index));
  if (!expected.Merge(given).ok()) {
    return context.Error("out_backprop has shape ", given.DebugString(), ", but the convolution ",
                         "of these input and filter sizes has shape ", expected.DebugString());
  }
  return Status::OK();
}

Status Conv2DShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(0, 4));
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 4));
  WEFT_ASSIGN_OR_RETURN(PartialShape out,
                        ConvOutputShape(context, context.input(0), context.input(1)));
  context.set_output(0, std::move(out));
  return Status::OK();
}

// Checks out_backprop (input 2) against the convolution of `input` and `filter`, then sets the
// gradient's shape `output` (one of the two).
Status SetBackpropOutput(InferenceContext& context, const PartialShape& input,
                         const PartialShape& filter, PartialShape output) {
  WEFT_ASSIGN_OR_RETURN(PartialShape expected, ConvOutputShape(context, input, filter));
  WEFT_RETURN_IF_ERROR(CheckOutBackprop(context, expected, 2));
  context.set_output(0, std::move(output));
  return Status::OK();
}

// input_sizes [4], filter [KH,KW,Cin,Cout], out_backprop [N,OH,OW,Cout] -> [N,H,W,Cin].
Status Conv2DBackpropInputShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 4));
  WEFT_RETURN_IF_ERROR(context.WithRank(2, 4));
  WEFT_ASSIGN_OR_RETURN(PartialShape input, ShapeFromSizesInput(context, 0));
  PartialShape filter = AsRank4(context.input(1)), grad = AsRank4(context.input(2));
  input = FillUnknownDim(FillUnknownDim(input, 0, grad.dim(0)), 3, filter.dim(2));
  return SetBackpropOutput(context, input, filter, input);
}

// input [N,H,W,Cin], filter_sizes [4], out_backprop [N,OH,OW,Cout] -> [KH,KW,Cin,Cout].
Status Conv2DBackpropFilterShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(0, 4));
  WEFT_RETURN_IF_ERROR(context.WithRank(2, 4));
  WEFT_ASSIGN_OR_RETURN(PartialShape filter, ShapeFromSizesInput(context, 1));
  PartialShape input = AsRank4(context.input(0)), grad = AsRank4(context.input(2));
  filter = FillUnknownDim(FillUnknownDim(filter, 2, input.dim(3)), 3, grad.dim(3));
  return SetBackpropOutput(context, input, filter, filter);
}

// The MaxPool and AvgPool output shape for `input` [N,H,W,C] (rank 4 or unknown rank).
StatusOr<PartialShape> PoolOutputShape(const InferenceContext& context,
                                       const PartialShape& input_shape) {
  WEFT_RETURN_IF_ERROR(CheckNhwc(context));
  std::vector<int64_t> ksize, strides;
  WEFT_RETURN_IF_ERROR(GetWindowAttr(context, "ksize", &ksize));
  WEFT_RETURN_IF_ERROR(GetWindowAttr(context, "strides", &strides));
  std::string padding;
  WEFT_RETURN_IF_ERROR(context.GetAttr("padding", &padding));
  PartialShape input = AsRank4(input_shape);
  WEFT_ASSIGN_OR_RETURN(int64_t rows,
                        WindowedOutputSize(context, input.dim(1), ksize[1], strides[1], padding));
  WEFT_ASSIGN_OR_RETURN(int64_t cols,
                        WindowedOutputSize(context, input.dim(2), ksize[2], strides[2], padding));
  return PartialShape({input.dim(0), rows, cols, input.dim(3)});
}

// MaxPool and AvgPool: input [N,H,W,C] -> [N,OH,OW,C].
Status PoolShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(0, 4));
  WEFT_ASSIGN_OR_RETURN(PartialShape out, PoolOutputShape(context, context.input(0)));
  context.set_output(0, std::move(out));
  return Status::OK();
}

// orig_input [N,H,W,C], orig_output and grad [N,OH,OW,C] -> [N,H,W,C].
Status MaxPoolGradShape(InferenceContext& context) {
  for (int i = 0; i < 3; ++i) WEFT_RETURN_IF_ERROR(context.WithRank(i, 4));
  WEFT_ASSIGN_OR_RETURN(PartialShape expected, PoolOutputShape(context, context.input(0)));
  const char* names[] = {"orig_output", "grad"};
  for (int i = 1; i < 3; ++i) {
    PartialShape given = AsRank4(context.input(i));
    if (!expected.Merge(given).ok()) {
      return context.Error(names[i - 1], " has shape ", given.DebugString(),
                           ", but pooling orig_input gives shape ", expected.DebugString());
    }
  }
  context.set_output(0, context.input(0));
  return Status::OK();
}

// orig_input_shape [4] (its value when constant), grad [N,OH,OW,C] -> [N,H,W,C]. Batch and
// channels unknown in the constant come from grad.
Status AvgPoolGradShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(context.WithRank(1, 4));
  WEFT_ASSIGN_OR_RETURN(PartialShape input, ShapeFromSizesInput(context, 0));
  PartialShape grad = AsRank4(context.input(1));
  input = FillUnknownDim(FillUnknownDim(input, 0, grad.dim(0)), 3, grad.dim(3));
  WEFT_ASSIGN_OR_RETURN(PartialShape expected, PoolOutputShape(context, input));
  if (!expected.Merge(grad).ok()) {
    return context.Error("grad has shape ", grad.DebugString(), ", but pooling orig_input_shape ",
                         input.DebugString(), " gives shape ", expected.DebugString());
  }
  context.set_output(0, std::move(input));
  return Status::OK();
}

// The attrs every Conv2D-family op has.
OpDefBuilder& AddConvAttrs(OpDefBuilder& builder) {
  return builder.Attr("T: {float32, float64, bfloat16}")
      .Attr("strides: list(int)")
      .Attr("use_cudnn_on_gpu: bool = true")
      .Attr("padding: {'SAME', 'VALID'}")
      .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
      .Attr("dilations: list(int) = [1, 1, 1, 1]");
}

// `types` is the T attr's spec: MaxPool also pools integers, AvgPool (a mean) only floats.
OpDefBuilder& AddPoolAttrs(OpDefBuilder& builder,
                           const char* types = "T: {float32, float64, int32, int64}") {
  return builder.Attr(types)
      .Attr("ksize: list(int)")
      .Attr("strides: list(int)")
      .Attr("padding: {'SAME', 'VALID'}")
      .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'");
}

// Conv2D, its fused form and its two gradients.
void RegisterConv2DOps(OpRegistry& registry) {
  OpDefBuilder conv("Conv2D");
  conv.Input("input: T").Input("filter: T").Output("output: T");
  registry.RegisterOrDie(
      AddConvAttrs(conv)
          .SetShapeFn(Conv2DShape)
          .Doc("2-D convolution (cross-correlation) of NHWC input with an HWIO filter."));

  // What graph/fuse_ops.h makes of Conv2D -> BiasAdd (-> Relu) inside one partition.
  OpDefBuilder fused("_FusedConv2D");
  fused.Input("input: T").Input("filter: T").Input("bias: T").Output("output: T");
  registry.RegisterOrDie(AddConvAttrs(fused)
                             .Attr("activation: {'None', 'Relu'} = 'None'")
                             .SetIsInternal()
                             .SetShapeFn(Conv2DShape)
                             .Doc("Conv2D, plus bias [Cout] on every pixel, then the activation."));

  OpDefBuilder backprop_input("Conv2DBackpropInput");
  backprop_input.Input("input_sizes: int32")
      .HostMemory("input_sizes")
      .Input("filter: T")
      .Input("out_backprop: T")
      .Output("output: T");
  registry.RegisterOrDie(AddConvAttrs(backprop_input)
                             .SetIsInternal()
                             .SetShapeFn(Conv2DBackpropInputShape)
                             .Doc("Gradient of Conv2D with respect to its input."));

  OpDefBuilder backprop_filter("Conv2DBackpropFilter");
  backprop_filter.Input("input: T")
      .Input("filter_sizes: int32")
      .HostMemory("filter_sizes")
      .Input("out_backprop: T")
      .Output("output: T");
  registry.RegisterOrDie(AddConvAttrs(backprop_filter)
                             .SetIsInternal()
                             .SetShapeFn(Conv2DBackpropFilterShape)
                             .Doc("Gradient of Conv2D with respect to its filter."));
}

// MaxPool, its gradient and the gradient's fused form.
void RegisterMaxPoolOps(OpRegistry& registry) {
  OpDefBuilder max_pool("MaxPool");
  max_pool.Input("input: T").Output("output: T");
  registry.RegisterOrDie(AddPoolAttrs(max_pool).SetShapeFn(PoolShape).Doc(
      "Maximum over each ksize window of NHWC input; SAME padding ignores padded cells."));

  OpDefBuilder max_pool_grad("MaxPoolGrad");
  max_pool_grad.Input("orig_input: T").Input("orig_output: T").Input("grad: T").Output("output: T");
  registry.RegisterOrDie(AddPoolAttrs(max_pool_grad)
                             .SetIsInternal()
                             .SetShapeFn(MaxPoolGradShape)
                             .Doc("Routes each grad value to the first maximum of its window."));

  // What graph/fuse_ops.h makes of MaxPoolGrad -> ReluGrad over the Relu output that was pooled.
  OpDefBuilder fused_pool_grad("_FusedMaxPoolGrad");
  fused_pool_grad.Input("orig_input: T")
      .Input("orig_output: T")
      .Input("grad: T")
      .Output("output: T");
  registry.RegisterOrDie(AddPoolAttrs(fused_pool_grad)
                             .Attr("activation: {'Relu'} = 'Relu'")
                             .SetIsInternal()
                             .SetShapeFn(MaxPoolGradShape)
                             .Doc("MaxPoolGrad, then ReluGrad with orig_input as the features."));
}

void RegisterAvgPoolOps(OpRegistry& registry) {
  constexpr const char* kFloatTypes = "T: {float32, float64}";
  OpDefBuilder avg_pool("AvgPool");
  avg_pool.Input("value: T").Output("output: T");
  registry.RegisterOrDie(AddPoolAttrs(avg_pool, kFloatTypes)
                             .SetShapeFn(PoolShape)
                             .Doc("Mean of each ksize window of NHWC input; with SAME padding, "
                                  "the mean of the window's cells inside the image."));

  OpDefBuilder avg_pool_grad("AvgPoolGrad");
  avg_pool_grad.Input("orig_input_shape: int32")
      .HostMemory("orig_input_shape")
      .Input("grad: T")
      .Output("output: T");
  registry.RegisterOrDie(AddPoolAttrs(avg_pool_grad, kFloatTypes)
                             .SetIsInternal()
                             .SetShapeFn(AvgPoolGradShape)
                             .Doc("Spreads each grad value evenly over its window's cells inside "
                                  "the image."));
}

}  // namespace

void RegisterConvOps(OpRegistry& registry) {
  RegisterConv2DOps(registry);
  RegisterMaxPoolOps(registry);
  RegisterAvgPoolOps(registry);
}

}  // namespace weft::ops
