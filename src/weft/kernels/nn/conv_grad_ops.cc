// The gradients of Conv2D on CPU (NHWC, [KH, KW, Cin, Cout] filter), GEMM-based and chunked like
// Conv2D (see conv_common.h):
//   Conv2DBackpropInput:  per chunk, col = out_backprop [rows, Cout] x filter^T [Cout, KH*KW*Cin],
//                         then col2im adds each patch back where it was read from (sharded over
//                         input rows, or whole images per task, so no cell has two writers).
//   Conv2DBackpropFilter: filter_grad [KH*KW*Cin, Cout] = sum over chunks of
//                         im2col(input)^T [KH*KW*Cin, rows] x out_backprop [rows, Cout]; concurrent
//                         tasks sum into their own buffers, added up at the end.
// A 1x1 stride-1 convolution needs neither im2col nor col2im. float32 gradients run on oneDNN
// where conv_algorithm.h chooses it.
#include <algorithm>
#include <type_traits>

#include "weft/kernels/eigen_support.h"
#include "weft/kernels/gemm.h"
#include "weft/kernels/nn/conv_algorithm.h"
#include "weft/kernels/nn/conv_common.h"
#include "weft/kernels/nn/im2col.h"
#include "weft/kernels/nn/nn_kernels.h"
#include "weft/kernels/nn/onednn_conv.h"

namespace weft::kernels {
namespace {

template <typename T>
void FillZero(OpKernelContext* context, Tensor* t) {
  T* data = t->data<T>();
  ParallelFor(context, t->NumElements(), 1.0,
              [data](int64_t begin, int64_t end) { std::fill(data + begin, data + end, T(0)); });
}

// The input rows, counted over the batch, that units [first, last) read.
void InputRowRange(const SpatialGeometry& g, int64_t first, int64_t last, int64_t* row_begin,
                   int64_t* row_end) {
  const int64_t first_image = first / g.out_rows, last_image = (last - 1) / g.out_rows;
  int64_t first_row, last_row, unused;
  InputRowsOfUnits(g, first_image, first, last, &first_row, &unused);
  InputRowsOfUnits(g, last_image, first, last, &unused, &last_row);
  *row_begin = first_image * g.in_rows + first_row;
  *row_end = std::max(*row_begin, last_image * g.in_rows + last_row);
}

template <typename T>
class Conv2DBackpropInputOp final : public OpKernel {
 public:
  explicit Conv2DBackpropInputOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(ReadConvAttrs(*context, &attrs_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& filter = context->input(1);
    const Tensor& out_backprop = context->input(2);
    WEFT_ASSIGN_OR_RETURN(TensorShape input_shape,
                          ShapeFromSizesTensor(def(), context->input(0), "input_sizes"));
    WEFT_RETURN_IF_ERROR(CheckConvShapes(def(), input_shape, filter.shape()));
    WEFT_ASSIGN_OR_RETURN(
        SpatialGeometry g,
        ComputeSpatialGeometry(def(), input_shape, filter.dim_size(0), filter.dim_size(1), attrs_));
    const int64_t out_depth = filter.dim_size(3);
    WEFT_RETURN_IF_ERROR(
        CheckOutBackpropShape(def(), out_backprop.shape(), g.OutputShape(out_depth)));
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, input_shape, &output));
    if (output->NumElements() == 0) return Status::OK();
    if constexpr (std::is_same_v<T, float>) {
      if (out_backprop.NumElements() > 0 &&
          ChooseConvAlgorithm(ConvPass::kBackpropInput, g, out_depth, DataType::kFloat) ==
              ConvAlgorithm::kOneDnn) {
        // A case oneDNN has no kernel for falls back to im2col + GEMM.
        Status status = onednn_.BackpropInput(context, g, out_depth, filter.data<float>(),
                                              out_backprop.data<float>(), output->data<float>());
        if (!IsUnimplemented(status)) return status;
      }
    }

    const bool pointwise = IsPointwise(g);
    if (!pointwise || out_backprop.NumElements() == 0) FillZero<T>(context, output);
    if (out_backprop.NumElements() == 0) return Status::OK();
    const ConvPlan plan = PlanConvChunks(g, sizeof(T), context->device()->intra_op_threads(),
                                         /*whole_images=*/true);
    WEFT_RETURN_IF_ERROR(CheckConvGemmFitsBlas(def(), g, out_depth, plan));
    WEFT_ASSIGN_OR_RETURN(Tensor col, AllocateColumnBuffers<T>(plan, g, pointwise));
    const int64_t patch = g.patch_size();
    const T* weights = filter.data<T>();
    const T* grad = out_backprop.data<T>();
    T* input_grad = output->data<T>();
    RunChunks(context, plan, [&](int64_t first, int64_t last, int64_t task, bool) {
      // Pointwise: the GEMM writes the input gradient rows directly.
      T* patches = pointwise ? input_grad + first * g.out_cols * patch
                             : col.data<T>() + task * plan.ColElements(g);
      Gemm(
          GemmDims{
              .m = (last - first) * g.out_cols, .n = patch, .k = out_depth, .transpose_b = true},
          T(1), grad + first * g.out_cols * out_depth, out_depth, weights, out_depth, T(0), patches,
          patch);
      if (pointwise) return;
      int64_t row_begin, row_end;
      InputRowRange(g, first, last, &row_begin, &row_end);
      const double row_cost = static_cast<double>(g.out_cols * patch) /
                              static_cast<double>(std::max<int64_t>(1, g.stride_rows));
      ForInChunk(context, plan, row_end - row_begin, row_cost, [&](int64_t begin, int64_t end) {
        Col2ImRows(patches, g, first, last, row_begin + begin, row_begin + end, input_grad);
      });
    });
    return Status::OK();
  }

 private:
  WindowAttrs attrs_;
  OneDnnConvolution onednn_;
};

template <typename T>
class Conv2DBackpropFilterOp final : public OpKernel {
 public:
  explicit Conv2DBackpropFilterOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(ReadConvAttrs(*context, &attrs_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    const Tensor& out_backprop = context->input(2);
    WEFT_ASSIGN_OR_RETURN(TensorShape filter_shape,
                          ShapeFromSizesTensor(def(), context->input(1), "filter_sizes"));
    WEFT_RETURN_IF_ERROR(CheckConvShapes(def(), input.shape(), filter_shape));
    WEFT_ASSIGN_OR_RETURN(SpatialGeometry g,
                          ComputeSpatialGeometry(def(), input.shape(), filter_shape.dim_size(0),
                                                 filter_shape.dim_size(1), attrs_));
    const int64_t out_depth = filter_shape.dim_size(3);
    WEFT_RETURN_IF_ERROR(
        CheckOutBackpropShape(def(), out_backprop.shape(), g.OutputShape(out_depth)));
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, filter_shape, &output));
    if (output->NumElements() == 0) return Status::OK();
    T* filter_grad = output->data<T>();
    if (out_backprop.NumElements() == 0) {  // no output pixels: every sum is empty
      std::fill(filter_grad, filter_grad + output->NumElements(), T(0));
      return Status::OK();
    }
    if constexpr (std::is_same_v<T, float>) {
      if (ChooseConvAlgorithm(ConvPass::kBackpropFilter, g, out_depth, DataType::kFloat) ==
          ConvAlgorithm::kOneDnn) {
        // A case oneDNN has no kernel for falls back to im2col + GEMM.
        Status status = onednn_.BackpropFilter(context, g, out_depth, input.data<float>(),
                                               out_backprop.data<float>(), filter_grad);
        if (!IsUnimplemented(status)) return status;
      }
    }

    const bool pointwise = IsPointwise(g);
    const ConvPlan plan = PlanConvChunks(g, sizeof(T), context->device()->intra_op_threads(),
                                         /*whole_images=*/false);
    WEFT_RETURN_IF_ERROR(CheckConvGemmFitsBlas(def(), g, out_depth, plan));
    const int64_t patch = g.patch_size();
    const int64_t filter_size = output->NumElements();
    // Task 0 sums into the output, task t > 0 into partial row t - 1.
    WEFT_ASSIGN_OR_RETURN(
        Tensor partial,
        Tensor::Allocate(DataTypeToEnum<T>::value, TensorShape({plan.num_tasks - 1, filter_size})));
    WEFT_ASSIGN_OR_RETURN(Tensor col, AllocateColumnBuffers<T>(plan, g, pointwise));
    const T* in = input.data<T>();
    const T* grad = out_backprop.data<T>();
    RunChunks(context, plan, [&](int64_t first, int64_t last, int64_t task, bool first_of_task) {
      const T* patches = ChunkPatches(context, plan, g, pointwise, in, col, first, last, task);
      T* sum = task == 0 ? filter_grad : partial.data<T>() + (task - 1) * filter_size;
      Gemm(
          GemmDims{
              .m = patch, .n = out_depth, .k = (last - first) * g.out_cols, .transpose_a = true},
          T(1), patches, patch, grad + first * g.out_cols * out_depth, out_depth,
          first_of_task ? T(0) : T(1), sum, out_depth);
    });
    for (int64_t task = 1; task < plan.num_tasks; ++task) {
      const T* part = partial.data<T>() + (task - 1) * filter_size;
      for (int64_t i = 0; i < filter_size; ++i) filter_grad[i] += part[i];
    }
    return Status::OK();
  }

 private:
  WindowAttrs attrs_;
  OneDnnConvolution onednn_;
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<Conv2DBackpropInputOp<T>>(
      KernelDef("Conv2DBackpropInput", "CPU").TypeConstraint<T>("T"));
  registry.Register<Conv2DBackpropFilterOp<T>>(
      KernelDef("Conv2DBackpropFilter", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterConvGradKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
}

}  // namespace weft::kernels
