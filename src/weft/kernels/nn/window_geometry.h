// Window geometry shared by the Conv2D and pooling kernels (NHWC only): reading and checking the
// strides/ksize/padding/data_format/dilations attrs when a kernel is built, and computing output
// sizes and leading padding for given input and window sizes the way the reference system does:
//   SAME:  out = ceil(in / stride), pad_before = max((out - 1) * stride + window - in, 0) / 2
//   VALID: out = (in - window + stride) / stride (an error when negative), no padding.
// Every error names the node. Plain values; safe from any thread.
#pragma once

#include <algorithm>
#include <cstdint>

#include "weft/core/tensor_shape.h"
#include "weft/framework/op_kernel.h"

namespace weft::kernels {

enum class Padding { kSame, kValid };

// The attrs of a windowed op. For convolutions the window comes from the filter, so window_rows
// and window_cols stay 0.
struct WindowAttrs {
  int64_t window_rows = 0;
  int64_t window_cols = 0;
  int64_t stride_rows = 1;
  int64_t stride_cols = 1;
  Padding padding = Padding::kValid;
};

// Reads strides, padding, data_format and dilations of a Conv2D-family node.
Status ReadConvAttrs(const OpKernelConstruction& context, WindowAttrs* attrs);
// Reads ksize, strides, padding and data_format of a MaxPool-family node.
Status ReadPoolAttrs(const OpKernelConstruction& context, WindowAttrs* attrs);

// Sizes of one windowed op over a batch of NHWC images.
struct SpatialGeometry {
  int64_t batch = 0;
  int64_t in_rows = 0;
  int64_t in_cols = 0;
  int64_t in_depth = 0;
  int64_t window_rows = 0;
  int64_t window_cols = 0;
  int64_t stride_rows = 1;
  int64_t stride_cols = 1;
  int64_t out_rows = 0;
  int64_t out_cols = 0;
  int64_t pad_top = 0;
  int64_t pad_left = 0;

  // Elements of one im2col row: a window over all input channels.
  int64_t patch_size() const { return window_rows * window_cols * in_depth; }
  TensorShape OutputShape(int64_t out_depth) const {
    return TensorShape({batch, out_rows, out_cols, out_depth});
  }
};

// The window of output cell (out_row, out_col) clipped to the image: rows [row_begin, row_end)
// and cols [col_begin, col_end). Pooling reads only these cells (SAME padding adds no values), and
// the window is never empty for SAME or VALID padding.
struct ClippedWindow {
  int64_t row_begin, row_end, col_begin, col_end;
  int64_t num_cells() const { return (row_end - row_begin) * (col_end - col_begin); }
};
// Inline: the pooling loops call it once per output cell.
inline ClippedWindow WindowAt(const SpatialGeometry& g, int64_t out_row, int64_t out_col) {
  const int64_t row0 = out_row * g.stride_rows - g.pad_top;
  const int64_t col0 = out_col * g.stride_cols - g.pad_left;
  return {std::max<int64_t>(row0, 0), std::min(row0 + g.window_rows, g.in_rows),
          std::max<int64_t>(col0, 0), std::min(col0 + g.window_cols, g.in_cols)};
}

// The geometry for `input_shape` [N,H,W,C] (rank 4, checked by the caller) and a window of
// window_rows x window_cols (each >= 1). InvalidArgument naming `node` when the VALID output size
// would be negative or the sizes are too large for the BLAS index type.
StatusOr<SpatialGeometry> ComputeSpatialGeometry(const proto::NodeDef& node,
                                                 const TensorShape& input_shape,
                                                 int64_t window_rows, int64_t window_cols,
                                                 const WindowAttrs& attrs);

// Reads a shape held by an int32 [4] tensor (Conv2DBackprop's input_sizes and filter_sizes).
StatusOr<TensorShape> ShapeFromSizesTensor(const proto::NodeDef& node, const Tensor& sizes,
                                           std::string_view what);

}  // namespace weft::kernels
