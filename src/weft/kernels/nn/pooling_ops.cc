// MaxPool and MaxPoolGrad on CPU over NHWC images. MaxPool takes, per channel, the maximum of each
// ksize window (cells of the window in the SAME padding are ignored; every window holds at least
// one real cell). MaxPoolGrad adds each grad value to the input cell that was the window's maximum,
// the first one in row-major window order on ties, recomputing the argmax from orig_input.
// Both work on whole output rows, parallel over rows; MaxPoolGrad with overlapping windows (a
// stride smaller than the window) works on whole images instead, so no input cell has two writers.
#include <algorithm>
#include <limits>
#include <vector>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/eigen_support.h"
#include "weft/kernels/nn/nn_kernels.h"
#include "weft/kernels/nn/window_geometry.h"

namespace weft::kernels {
namespace {

Status CheckPoolInput(const proto::NodeDef& node, const Tensor& input, std::string_view what) {
  if (input.dims() != 4) {
    return InvalidArgument(FormatNodeForError(node), ": ", what,
                           " must be rank 4 [batch, rows, cols, channels], but has shape ",
                           input.shape());
  }
  return Status::OK();
}

template <typename T>
class MaxPoolOp final : public OpKernel {
 public:
  explicit MaxPoolOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(ReadPoolAttrs(*context, &attrs_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    WEFT_RETURN_IF_ERROR(CheckPoolInput(def(), input, "input"));
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
          std::fill(dst, dst + depth, std::numeric_limits<T>::lowest());
          const ClippedWindow w = WindowAt(g, out_row, out_col);
          for (int64_t r = w.row_begin; r < w.row_end; ++r) {
            for (int64_t c = w.col_begin; c < w.col_end; ++c) {
              const T* src = image_in + (r * g.in_cols + c) * depth;
              for (int64_t d = 0; d < depth; ++d) dst[d] = src[d] > dst[d] ? src[d] : dst[d];
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

// Windows that do not overlap (W2's 2x2 of stride 2): each output row owns its input rows, so rows
// run in parallel and each input cell is written once. Per window: the maximum per channel, then
// the gradient to the first cell equal to it, all in loops over channels the compiler vectorises.
template <typename T>
void NonOverlappingGrad(OpKernelContext* context, const SpatialGeometry& g, const T* in,
                        const T* dy, bool relu, T* dx) {
  const int64_t depth = g.in_depth;
  const bool covers_input =
      g.stride_rows == g.window_rows && g.stride_cols == g.window_cols && g.pad_top >= 0 &&
      g.pad_left >= 0 &&
      (g.out_rows - 1) * g.stride_rows + g.window_rows - g.pad_top >= g.in_rows &&
      (g.out_cols - 1) * g.stride_cols + g.window_cols - g.pad_left >= g.in_cols;
  if (!covers_input) {  // cells that no window reads get no gradient
    const int64_t total = g.batch * g.in_rows * g.in_cols * depth;
    ParallelFor(context, total, 1.0,
                [dx](int64_t begin, int64_t end) { std::fill(dx + begin, dx + end, T(0)); });
  }
  const double cost = static_cast<double>(g.out_cols * g.window_rows * g.window_cols * depth * 4);
  ParallelFor(context, g.batch * g.out_rows, cost, [&](int64_t begin, int64_t end) {
    std::vector<T> best(depth), placed(depth);
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t image = unit / g.out_rows, out_row = unit % g.out_rows;
      const int64_t image_offset = image * g.in_rows * g.in_cols * depth;
      const T* image_in = in + image_offset;
      T* image_dx = dx + image_offset;
      for (int64_t out_col = 0; out_col < g.out_cols; ++out_col) {
        const ClippedWindow w = WindowAt(g, out_row, out_col);
        const int64_t first = (w.row_begin * g.in_cols + w.col_begin) * depth;
        T* m = best.data();
        T* done = placed.data();
        std::copy(image_in + first, image_in + first + depth, m);
        for (int64_t r = w.row_begin; r < w.row_end; ++r) {
          for (int64_t c = w.col_begin; c < w.col_end; ++c) {
            const T* src = image_in + (r * g.in_cols + c) * depth;
            for (int64_t d = 0; d < depth; ++d) m[d] = src[d] > m[d] ? src[d] : m[d];
          }
        }
        const T* g_out = dy + (unit * g.out_cols + out_col) * depth;
        std::fill(done, done + depth, T(0));
        for (int64_t r = w.row_begin; r < w.row_end; ++r) {
          for (int64_t c = w.col_begin; c < w.col_end; ++c) {
            const int64_t cell = (r * g.in_cols + c) * depth;
            const T* src = image_in + cell;
            T* dst = image_dx + cell;
            for (int64_t d = 0; d < depth; ++d) {
              const bool take = src[d] == m[d] && done[d] == T(0);
              // Fused ReluGrad: the gradient passes only where the pooled input was positive.
              dst[d] = take && (!relu || src[d] > T(0)) ? g_out[d] : T(0);
              done[d] = take ? T(1) : done[d];
            }
          }
        }
        // A NaN first cell stays the maximum but equals nothing: it takes the gradient (which
        // ReluGrad then drops: NaN is not positive).
        if (!relu) {
          T* first_dx = image_dx + first;
          for (int64_t d = 0; d < depth; ++d) {
            first_dx[d] = done[d] == T(0) ? g_out[d] : first_dx[d];
          }
        }
      }
    }
  });
}

// Overlapping windows: whole images per shard, gradients added where windows share cells.
template <typename T>
void OverlappingGrad(OpKernelContext* context, const SpatialGeometry& g, const T* in, const T* dy,
                     bool relu, T* dx) {
  const int64_t depth = g.in_depth;
  const int64_t image_size = g.in_rows * g.in_cols * depth;
  const double cost = static_cast<double>(
      g.out_rows * g.out_cols * g.window_rows * g.window_cols * depth * 2 + image_size);
  ParallelFor(context, g.batch, cost, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> best_cell(depth);
    std::vector<T> best(depth);
    for (int64_t image = begin; image < end; ++image) {
      const T* image_in = in + image * image_size;
      T* image_dx = dx + image * image_size;
      std::fill(image_dx, image_dx + image_size, T(0));
      for (int64_t out_row = 0; out_row < g.out_rows; ++out_row) {
        for (int64_t out_col = 0; out_col < g.out_cols; ++out_col) {
          const ClippedWindow w = WindowAt(g, out_row, out_col);
          const int64_t first_cell = w.row_begin * g.in_cols + w.col_begin;
          std::copy(image_in + first_cell * depth, image_in + (first_cell + 1) * depth,
                    best.begin());
          std::fill(best_cell.begin(), best_cell.end(), first_cell);
          for (int64_t r = w.row_begin; r < w.row_end; ++r) {
            for (int64_t c = w.col_begin; c < w.col_end; ++c) {
              const int64_t cell = r * g.in_cols + c;
              const T* src = image_in + cell * depth;
              for (int64_t d = 0; d < depth; ++d) {
                if (src[d] > best[d]) {
                  best[d] = src[d];
                  best_cell[d] = cell;
                }
              }
            }
          }
          const T* g_out = dy + ((image * g.out_rows + out_row) * g.out_cols + out_col) * depth;
          for (int64_t d = 0; d < depth; ++d) image_dx[best_cell[d] * depth + d] += g_out[d];
        }
      }
      if (relu) {  // ReluGrad: only where the pooled input was positive
        for (int64_t i = 0; i < image_size; ++i) {
          image_dx[i] = image_in[i] > T(0) ? image_dx[i] : T(0);
        }
      }
    }
  });
}

// Also serves _FusedMaxPoolGrad (graph/fuse_ops.h): the gradient then passes only where
// orig_input, the Relu output that was pooled, is positive, as a following ReluGrad would.
template <typename T>
class MaxPoolGradOp final : public OpKernel {
 public:
  explicit MaxPoolGradOp(OpKernelConstruction* context)
      : OpKernel(context), relu_(def().op() == "_FusedMaxPoolGrad") {
    context->SetStatus(ReadPoolAttrs(*context, &attrs_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& orig_input = context->input(0);
    const Tensor& orig_output = context->input(1);
    const Tensor& grad = context->input(2);
    WEFT_RETURN_IF_ERROR(CheckPoolInput(def(), orig_input, "orig_input"));
    WEFT_ASSIGN_OR_RETURN(SpatialGeometry g,
                          ComputeSpatialGeometry(def(), orig_input.shape(), attrs_.window_rows,
                                                 attrs_.window_cols, attrs_));
    const TensorShape out_shape = g.OutputShape(g.in_depth);
    if (!(orig_output.shape() == out_shape) || !(grad.shape() == out_shape)) {
      return InvalidArgument(FormatNodeForError(def()), ": orig_output ", orig_output.shape(),
                             " and grad ", grad.shape(), " must both have shape ", out_shape,
                             ", the pooled shape of orig_input ", orig_input.shape());
    }
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, orig_input.shape(), &output));
    if (output->NumElements() == 0) return Status::OK();
    const T* in = orig_input.data<T>();
    const T* dy = grad.data<T>();
    T* dx = output->data<T>();
    if (g.stride_rows >= g.window_rows && g.stride_cols >= g.window_cols) {
      NonOverlappingGrad(context, g, in, dy, relu_, dx);
    } else {
      OverlappingGrad(context, g, in, dy, relu_, dx);
    }
    return Status::OK();
  }

 private:
  const bool relu_;
  WindowAttrs attrs_;
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<MaxPoolOp<T>>(KernelDef("MaxPool", "CPU").TypeConstraint<T>("T"));
  registry.Register<MaxPoolGradOp<T>>(KernelDef("MaxPoolGrad", "CPU").TypeConstraint<T>("T"));
  registry.Register<MaxPoolGradOp<T>>(KernelDef("_FusedMaxPoolGrad", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterPoolingKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
  RegisterForType<int32_t>(registry);
  RegisterForType<int64_t>(registry);
}

}  // namespace weft::kernels
