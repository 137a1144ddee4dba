// AvgPool and AvgPoolGrad on CPU over NHWC images (float32, float64). AvgPool takes, per channel,
// the mean of each ksize window over the window's cells inside the image, so with SAME padding an
// edge window divides by fewer cells (as the reference system does). AvgPoolGrad gives each input
// cell the sum, over the windows that read it, of grad / (that window's cell count).
// Both run parallel over (image, row): AvgPool over output rows, AvgPoolGrad over input rows,
// gathering from the windows that cover each input cell so that no cell has two writers.
#include <algorithm>
#include <vector>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/eigen_support.h"
#include "weft/kernels/nn/nn_kernels.h"
#include "weft/kernels/nn/window_geometry.h"

namespace weft::kernels {
namespace {

template <typename T>
class AvgPoolOp final : public OpKernel {
 public:
  explicit AvgPoolOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(ReadPoolAttrs(*context, &attrs_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    if (input.dims() != 4) {
      return InvalidArgument(FormatNodeForError(def()),
                             ": value must be rank 4 [batch, rows, cols, channels], but has shape ",
                             input.shape());
    }
    WEFT_ASSIGN_OR_RETURN(SpatialGeometry g,
                          ComputeSpatialGeometry(def(), input.shape(), attrs_.window_rows,
                                                 attrs_.window_cols, attrs_));
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, g.OutputShape(g.in_depth), &output));
    if (output->NumElements() == 0) return Status::OK();
    const T* in = input.data<T>();
    T* out = output->data<T>();
    const int64_t depth = g.in_depth;
    const double cost = static_cast<double>(g.out_cols * g.window_rows * g.window_cols * depth);
    // Unit u: image u / out_rows, output row u % out_rows.
    ParallelFor(context, g.batch * g.out_rows, cost, [&](int64_t begin, int64_t end) {
      for (int64_t unit = begin; unit < end; ++unit) {
        const int64_t image = unit / g.out_rows, out_row = unit % g.out_rows;
        const T* image_in = in + image * g.in_rows * g.in_cols * depth;
        for (int64_t out_col = 0; out_col < g.out_cols; ++out_col) {
          T* dst = out + (unit * g.out_cols + out_col) * depth;
          std::fill(dst, dst + depth, T(0));
          const ClippedWindow w = WindowAt(g, out_row, out_col);
          for (int64_t r = w.row_begin; r < w.row_end; ++r) {
            for (int64_t c = w.col_begin; c < w.col_end; ++c) {
              const T* src = image_in + (r * g.in_cols + c) * depth;
              for (int64_t d = 0; d < depth; ++d) dst[d] += src[d];
            }
          }
          const T count = static_cast<T>(w.num_cells());
          for (int64_t d = 0; d < depth; ++d) dst[d] /= count;
        }
      }
    });
    return Status::OK();
  }

 private:
  WindowAttrs attrs_;
};

// The output indices [first, last) along one dimension whose windows cover input index `in`:
// those with out * stride - pad <= in < out * stride - pad + window.
void CoveringOutputs(int64_t in, int64_t window, int64_t stride, int64_t pad, int64_t out_size,
                     int64_t* first, int64_t* last) {
  const int64_t lowest_start = in + pad - window + 1;  // out * stride must reach it
  *first = lowest_start <= 0 ? 0 : (lowest_start + stride - 1) / stride;
  *last = std::min(out_size, (in + pad) / stride + 1);
}

template <typename T>
class AvgPoolGradOp final : public OpKernel {
 public:
  explicit AvgPoolGradOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(ReadPoolAttrs(*context, &attrs_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& sizes = context->input(0);
    const Tensor& grad = context->input(1);
    WEFT_ASSIGN_OR_RETURN(TensorShape in_shape,
                          ShapeFromSizesTensor(def(), sizes, "orig_input_shape"));
    WEFT_ASSIGN_OR_RETURN(
        SpatialGeometry g,
        ComputeSpatialGeometry(def(), in_shape, attrs_.window_rows, attrs_.window_cols, attrs_));
    const TensorShape out_shape = g.OutputShape(g.in_depth);
    if (!(grad.shape() == out_shape)) {
      return InvalidArgument(FormatNodeForError(def()), ": grad has shape ", grad.shape(),
                             ", but pooling orig_input_shape ", in_shape, " gives shape ",
                             out_shape);
    }
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, in_shape, &output));
    if (output->NumElements() == 0) return Status::OK();
    // 1 / (cells of each window) factors into a row part and a column part.
    std::vector<T> row_scale(g.out_rows), col_scale(g.out_cols);
    for (int64_t r = 0; r < g.out_rows; ++r) {
      const ClippedWindow w = WindowAt(g, r, 0);
      row_scale[r] = T(1) / static_cast<T>(w.row_end - w.row_begin);
    }
    for (int64_t c = 0; c < g.out_cols; ++c) {
      const ClippedWindow w = WindowAt(g, 0, c);
      col_scale[c] = T(1) / static_cast<T>(w.col_end - w.col_begin);
    }
    const T* dy = grad.data<T>();
    T* dx = output->data<T>();
    const int64_t depth = g.in_depth;
    const double cost = static_cast<double>(g.in_cols * depth) *
                        static_cast<double>(g.window_rows * g.window_cols) /
                        static_cast<double>(g.stride_rows * g.stride_cols);
    // Unit u: image u / in_rows, input row u % in_rows.
    ParallelFor(context, g.batch * g.in_rows, cost, [&](int64_t begin, int64_t end) {
      for (int64_t unit = begin; unit < end; ++unit) {
        const int64_t image = unit / g.in_rows, in_row = unit % g.in_rows;
        const T* image_dy = dy + image * g.out_rows * g.out_cols * depth;
        int64_t row_first, row_last;
        CoveringOutputs(in_row, g.window_rows, g.stride_rows, g.pad_top, g.out_rows, &row_first,
                        &row_last);
        for (int64_t in_col = 0; in_col < g.in_cols; ++in_col) {
          T* dst = dx + (unit * g.in_cols + in_col) * depth;
          std::fill(dst, dst + depth, T(0));
          int64_t col_first, col_last;
          CoveringOutputs(in_col, g.window_cols, g.stride_cols, g.pad_left, g.out_cols, &col_first,
                          &col_last);
          for (int64_t r = row_first; r < row_last; ++r) {
            for (int64_t c = col_first; c < col_last; ++c) {
              const T scale = row_scale[r] * col_scale[c];
              const T* src = image_dy + (r * g.out_cols + c) * depth;
              for (int64_t d = 0; d < depth; ++d) dst[d] += src[d] * scale;
            }
          }
        }
      }
    });
    return Status::OK();
  }

 private:
  WindowAttrs attrs_;
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<AvgPoolOp<T>>(KernelDef("AvgPool", "CPU").TypeConstraint<T>("T"));
  registry.Register<AvgPoolGradOp<T>>(KernelDef("AvgPoolGrad", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterAvgPoolingKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
}

}  // namespace weft::kernels
