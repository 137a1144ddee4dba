// Reading of windowed-op attrs and the output-size and padding rules; see window_geometry.h.
#include "weft/kernels/nn/window_geometry.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "weft/framework/node_def_util.h"

namespace weft::kernels {
namespace {

// A list(int) attr of 4 positive values that is 1 in the batch and channel dimensions.
Status ReadWindowList(const OpKernelConstruction& context, std::string_view name, int64_t* rows,
                      int64_t* cols) {
  std::vector<int64_t> values;
  WEFT_RETURN_IF_ERROR(context.GetAttr(name, &values));
  const std::string node = FormatNodeForError(context.node_def());
  if (values.size() != 4) {
    return InvalidArgument(node, ": ", name, " must have 4 elements, but has ", values.size());
  }
  for (int64_t v : values) {
    if (v <= 0) {
      return InvalidArgument(node, ": ", name, " must be positive, but is [", StrJoin(values, ","),
                             "]");
    }
  }
  if (values[0] != 1 || values[3] != 1) {
    return InvalidArgument(node, ": ", name,
                           " must be 1 in the batch and channel dimensions, but is [",
                           StrJoin(values, ","), "]");
  }
  *rows = values[1];
  *cols = values[2];
  return Status::OK();
}

Status ReadPaddingAndFormat(const OpKernelConstruction& context, WindowAttrs* attrs) {
  std::string padding, data_format;
  WEFT_RETURN_IF_ERROR(context.GetAttr("padding", &padding));
  WEFT_RETURN_IF_ERROR(context.GetAttr("data_format", &data_format));
  const std::string node = FormatNodeForError(context.node_def());
  if (padding != "SAME" && padding != "VALID") {
    return InvalidArgument(node, ": padding must be SAME or VALID, but is ", padding);
  }
  if (data_format != "NHWC") {
    return InvalidArgument(node, ": data_format ", data_format, " is not supported; use NHWC");
  }
  attrs->padding = padding == "SAME" ? Padding::kSame : Padding::kValid;
  return Status::OK();
}

// Output size and leading padding along one spatial dimension.
Status WindowedOutputSize(const proto::NodeDef& node, int64_t in, int64_t window, int64_t stride,
                          Padding padding, int64_t* out, int64_t* pad_before) {
  if (padding == Padding::kSame) {
    *out = (in + stride - 1) / stride;
    int64_t pad_total = std::max<int64_t>((*out - 1) * stride + window - in, 0);
    *pad_before = pad_total / 2;
    return Status::OK();
  }
  *out = (in - window + stride) / stride;
  *pad_before = 0;
  if (*out < 0) {
    return InvalidArgument(FormatNodeForError(node),
                           ": computed output size would be negative: ", *out, " (input size ", in,
                           ", window ", window, ", stride ", stride, ")");
  }
  return Status::OK();
}

}  // namespace

Status ReadConvAttrs(const OpKernelConstruction& context, WindowAttrs* attrs) {
  WEFT_RETURN_IF_ERROR(
      ReadWindowList(context, "strides", &attrs->stride_rows, &attrs->stride_cols));
  WEFT_RETURN_IF_ERROR(ReadPaddingAndFormat(context, attrs));
  std::vector<int64_t> dilations;
  WEFT_RETURN_IF_ERROR(context.GetAttr("dilations", &dilations));
  if (dilations != std::vector<int64_t>{1, 1, 1, 1}) {
    return InvalidArgument(FormatNodeForError(context.node_def()),
                           ": dilations must be [1,1,1,1] (dilated convolution is not "
                           "supported), but are [",
                           StrJoin(dilations, ","), "]");
  }
  return Status::OK();
}

Status ReadPoolAttrs(const OpKernelConstruction& context, WindowAttrs* attrs) {
  WEFT_RETURN_IF_ERROR(ReadWindowList(context, "ksize", &attrs->window_rows, &attrs->window_cols));
  WEFT_RETURN_IF_ERROR(
      ReadWindowList(context, "strides", &attrs->stride_rows, &attrs->stride_cols));
  return ReadPaddingAndFormat(context, attrs);
}

StatusOr<SpatialGeometry> ComputeSpatialGeometry(const proto::NodeDef& node,
                                                 const TensorShape& input_shape,
                                                 int64_t window_rows, int64_t window_cols,
                                                 const WindowAttrs& attrs) {
  SpatialGeometry g;
  g.batch = input_shape.dim_size(0);
  g.in_rows = input_shape.dim_size(1);
  g.in_cols = input_shape.dim_size(2);
  g.in_depth = input_shape.dim_size(3);
  g.window_rows = window_rows;
  g.window_cols = window_cols;
  g.stride_rows = attrs.stride_rows;
  g.stride_cols = attrs.stride_cols;
  WEFT_RETURN_IF_ERROR(WindowedOutputSize(node, g.in_rows, window_rows, g.stride_rows,
                                          attrs.padding, &g.out_rows, &g.pad_top));
  WEFT_RETURN_IF_ERROR(WindowedOutputSize(node, g.in_cols, window_cols, g.stride_cols,
                                          attrs.padding, &g.out_cols, &g.pad_left));
  // im2col rows of one output row must be addressable by BLAS (32-bit indices).
  if (window_rows > INT_MAX / std::max<int64_t>(1, window_cols) ||
      g.patch_size() > INT_MAX / std::max<int64_t>(1, g.out_cols)) {
    return InvalidArgument(FormatNodeForError(node), ": window ", window_rows, "x", window_cols,
                           " over ", g.in_depth, " channels and ", g.out_cols,
                           " output columns is too large");
  }
  return g;
}

StatusOr<TensorShape> ShapeFromSizesTensor(const proto::NodeDef& node, const Tensor& sizes,
                                           std::string_view what) {
  if (sizes.dims() != 1 || sizes.NumElements() != 4) {
    return InvalidArgument(FormatNodeForError(node), ": ", what,
                           " must be an int32 vector of 4 sizes, but has shape ", sizes.shape());
  }
  std::vector<int64_t> dims(sizes.data<int32_t>(), sizes.data<int32_t>() + 4);
  StatusOr<TensorShape> shape = TensorShape::Create(dims);
  if (!shape.ok()) {
    return InvalidArgument(FormatNodeForError(node), ": ", what, " [", StrJoin(dims, ","),
                           "] is not a valid shape: ", shape.status().message());
  }
  return shape;
}

}  // namespace weft::kernels
