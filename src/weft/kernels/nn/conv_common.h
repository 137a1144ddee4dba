// Pieces shared by the Conv2D kernel and its two backprop kernels: shape checks with messages that
// name the node, and the plan that splits a convolution's output rows ("units", see im2col.h) into
// chunks whose column buffers stay small, plus the loop that runs the chunks.
//
// Two ways to use the cores, chosen per call from how OpenBLAS is configured:
//  - OpenBLAS multi-threaded (or one intra-op thread): chunks run one after another; im2col and
//    col2im of a chunk are spread over the intra-op threads and each GEMM over OpenBLAS's threads.
//  - OpenBLAS single-threaded: chunks are dealt to as many concurrent tasks as intra-op threads,
//    each task with its own column buffer doing im2col, GEMM and col2im on its own thread, so the
//    cores never sit idle during a GEMM and no two thread pools compete.
#pragma once

#include <algorithm>
#include <cstdint>

#include "weft/core/tensor.h"
#include "weft/graph.pb.h"
#include "weft/kernels/eigen_support.h"
#include "weft/kernels/nn/im2col.h"
#include "weft/kernels/nn/window_geometry.h"

namespace weft::kernels {

// Checks input [N,H,W,Cin] against filter [KH,KW,Cin,Cout]: ranks, channel counts, and a filter
// window of at least 1x1.
Status CheckConvShapes(const proto::NodeDef& node, const TensorShape& input,
                       const TensorShape& filter);

// Checks that out_backprop has the shape the forward convolution would produce.
Status CheckOutBackpropShape(const proto::NodeDef& node, const TensorShape& out_backprop,
                             const TensorShape& expected);

// A 1x1 window with stride 1 (so no padding): the rows of the input are the im2col rows already,
// and the convolution is a GEMM over the pixels.
inline bool IsPointwise(const SpatialGeometry& g) {
  return g.window_rows == 1 && g.window_cols == 1 && g.stride_rows == 1 && g.stride_cols == 1;
}

struct ConvPlan {
  int64_t units = 0;            // output rows over the batch: batch * out_rows
  int64_t units_per_chunk = 1;  // each chunk's column buffer holds units_per_chunk * out_cols rows
  int64_t num_chunks = 0;
  int64_t num_tasks = 1;  // > 1: concurrent tasks, each with its own buffer (see above)

  // Task t runs chunks [FirstChunk(t), FirstChunk(t + 1)).
  int64_t FirstChunk(int64_t task) const { return num_chunks * task / num_tasks; }
  // Elements of one task's column buffer.
  int64_t ColElements(const SpatialGeometry& g) const {
    return std::min(units, units_per_chunk) * g.out_cols * g.patch_size();
  }
};

// Plans the chunks for elements of `element_bytes`. With `whole_images`, concurrent tasks get
// chunks of whole images, so that col2im from two tasks never adds into the same cell.
ConvPlan PlanConvChunks(const SpatialGeometry& g, int64_t element_bytes, int intra_op_threads,
                        bool whole_images);

// A float32 copy of a bfloat16 tensor (exact), and `from` (float32) rounded into the bfloat16
// tensor `to` of the same shape: the bfloat16 convolutions' way through float32 kernels.
StatusOr<Tensor> WidenBFloat16(const Tensor& tensor);
Status NarrowToBFloat16(const Tensor& from, Tensor* to);

// InvalidArgument naming `node` when a chunk's GEMM (its rows, the patch size, the output depth)
// would pass BLAS's 32-bit int, which only shapes of many gigabytes reach.
Status CheckConvGemmFitsBlas(const proto::NodeDef& node, const SpatialGeometry& g,
                             int64_t out_depth, const ConvPlan& plan);

// Calls body(first_unit, last_unit, task, first_of_task) for each chunk of `plan`: in order on
// this thread when plan.num_tasks == 1, else from plan.num_tasks concurrent tasks, each running
// its chunks in order. `first_of_task` marks a task's first chunk.
template <typename Body>
void RunChunks(OpKernelContext* context, const ConvPlan& plan, Body&& body) {
  auto run_task = [&](int64_t task) {
    for (int64_t chunk = plan.FirstChunk(task); chunk < plan.FirstChunk(task + 1); ++chunk) {
      const int64_t first = chunk * plan.units_per_chunk;
      body(first, std::min(plan.units, first + plan.units_per_chunk), task,
           chunk == plan.FirstChunk(task));
    }
  };
  if (plan.num_tasks == 1) {
    run_task(0);
    return;
  }
  // A huge cost per task makes every task its own shard.
  ParallelFor(context, plan.num_tasks, 1e12, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) run_task(task);
  });
}

// Inside a chunk body: spreads fn(begin, end) over [0, total) on the intra-op threads when the
// chunks run one at a time, else runs it on the task's own thread.
template <typename Fn>
void ForInChunk(OpKernelContext* context, const ConvPlan& plan, int64_t total, double cost,
                Fn&& fn) {
  if (plan.num_tasks == 1) {
    ParallelFor(context, total, cost, fn);
  } else {
    fn(int64_t{0}, total);
  }
}

// One column buffer per task of `plan` (an empty tensor when `pointwise`: no im2col needed).
template <typename T>
StatusOr<Tensor> AllocateColumnBuffers(const ConvPlan& plan, const SpatialGeometry& g,
                                       bool pointwise) {
  if (pointwise) return Tensor();
  return Tensor::Allocate(DataTypeToEnum<T>::value,
                          TensorShape({plan.num_tasks, plan.ColElements(g)}));
}

// Inside a chunk body: the patches of units [first, last) — im2col'd into `task`'s buffer of
// `col`, or, when `pointwise`, the input rows themselves.
template <typename T>
const T* ChunkPatches(OpKernelContext* context, const ConvPlan& plan, const SpatialGeometry& g,
                      bool pointwise, const T* input, Tensor& col, int64_t first, int64_t last,
                      int64_t task) {
  const int64_t patch = g.patch_size();
  if (pointwise) return input + first * g.out_cols * patch;
  T* buffer = col.data<T>() + task * plan.ColElements(g);
  ForInChunk(context, plan, last - first, static_cast<double>(g.out_cols * patch),
             [&](int64_t begin, int64_t end) {
               Im2Col(input, g, first, first + begin, first + end, buffer);
             });
  return buffer;
}

}  // namespace weft::kernels
