// The gradients of Conv2D on CPU (NHWC, [KH, KW, Cin, Cout] filter), GEMM-based and chunked like
// Conv2D (see conv_common.h):
//   Conv2DBackpropInput:  per chunk, col = out_backprop [rows, Cout] x filter^T [Cout, KH*KW*Cin],
//                         then col2im adds each patch back where it was read from (sharded over
//                         input rows, or whole images per task, so no cell has two writers).
//   Conv2DBackpropFilter: filter_grad [KH*KW*Cin, Cout] = sum over chunks of
//                         im2col(input)^T [KH*KW*Cin, rows] x out_backprop [rows, Cout]; concurrent
//                         tasks sum into their own buffers, added up at the end.
// A 1x1 stride-1 convolution needs neither im2col nor col2im. float32 gradients run on oneDNN
// where conv_algorithm.h chooses it; bfloat16 ones on oneDNN where the CPU multiplies bfloat16,
// else in float32, rounded once.
#include <algorithm>
#include <type_traits>

#include "weft/kernels/eigen_support.h"
#include "weft/kernels/gemm.h"
#include "weft/kernels/gemm_bf16.h"
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
    if constexpr (std::is_same_v<T, bfloat16>) {
      if (BFloat16GemmIsNative() && out_backprop.NumElements() > 0 &&
          OneDnnConvolution::Supports(g, out_depth)) {
        Status status = onednn_.BackpropInput(
            context, g, out_depth, DataType::kBFloat16, filter.data<bfloat16>(),
            out_backprop.data<bfloat16>(), output->data<bfloat16>());
        if (!IsUnimplemented(status)) return status;
      }
      // Elsewhere in float32, rounded once.
      WEFT_ASSIGN_OR_RETURN(Tensor filter32, WidenBFloat16(filter));
      WEFT_ASSIGN_OR_RETURN(Tensor grad32, WidenBFloat16(out_backprop));
      WEFT_ASSIGN_OR_RETURN(Tensor output32, Tensor::Allocate(DataType::kFloat, input_shape));
      WEFT_RETURN_IF_ERROR(Run<float>(context, g, out_depth, filter32, grad32, &output32));
      return NarrowToBFloat16(output32, output);
    } else {
      return Run<T>(context, g, out_depth, filter, out_backprop, output);
    }
  }

 private:
  // input_grad (`output`, allocated, of U) from the filter and out_backprop (of U).
  template <typename U>
  Status Run(OpKernelContext* context, const SpatialGeometry& g, int64_t out_depth,
             const Tensor& filter, const Tensor& out_backprop, Tensor* output) {
    if constexpr (std::is_same_v<U, float>) {
      if (out_backprop.NumElements() > 0 &&
          ChooseConvAlgorithm(ConvPass::kBackpropInput, g, out_depth, DataType::kFloat) ==
              ConvAlgorithm::kOneDnn) {
        // A case oneDNN has no kernel for falls back to im2col + GEMM.
        Status status =
            onednn_.BackpropInput(context, g, out_depth, DataType::kFloat, filter.data<float>(),
                                  out_backprop.data<float>(), output->data<float>());
        if (!IsUnimplemented(status)) return status;
      }
    }

    const bool pointwise = IsPointwise(g);
    if (!pointwise || out_backprop.NumElements() == 0) FillZero<U>(context, output);
    if (out_backprop.NumElements() == 0) return Status::OK();
    const ConvPlan plan = PlanConvChunks(g, sizeof(U), context->device()->intra_op_threads(),
                                         /*whole_images=*/true);
    WEFT_RETURN_IF_ERROR(CheckConvGemmFitsBlas(def(), g, out_depth, plan));
    WEFT_ASSIGN_OR_RETURN(Tensor col, AllocateColumnBuffers<U>(plan, g, pointwise));
    const int64_t patch = g.patch_size();
    const U* weights = filter.data<U>();
    const U* grad = out_backprop.data<U>();
    U* input_grad = output->data<U>();
    RunChunks(context, plan, [&](int64_t first, int64_t last, int64_t task, bool) {
      // Pointwise: the GEMM writes the input gradient rows directly.
      U* patches = pointwise ? input_grad + first * g.out_cols * patch
                             : col.data<U>() + task * plan.ColElements(g);
      Gemm(
          GemmDims{
              .m = (last - first) * g.out_cols, .n = patch, .k = out_depth, .transpose_b = true},
          U(1), grad + first * g.out_cols * out_depth, out_depth, weights, out_depth, U(0), patches,
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
    if (out_backprop.NumElements() == 0) {  // no output pixels: every sum is empty
      T* filter_grad = output->data<T>();
      std::fill(filter_grad, filter_grad + output->NumElements(), T(0));
      return Status::OK();
    }
    if constexpr (std::is_same_v<T, bfloat16>) {
      // Summed in float32 (oneDNN's, or the float32 kernel's on the widened operands), rounded
      // once.
      WEFT_ASSIGN_OR_RETURN(Tensor output32, Tensor::Allocate(DataType::kFloat, filter_shape));
      Status status = Unimplemented("no bfloat16 instructions");
      if (BFloat16GemmIsNative() && OneDnnConvolution::Supports(g, out_depth)) {
        status = onednn_.BackpropFilter(context, g, out_depth, DataType::kBFloat16,
                                        input.data<bfloat16>(), out_backprop.data<bfloat16>(),
                                        output32.data<float>());
      }
      if (IsUnimplemented(status)) {
        WEFT_ASSIGN_OR_RETURN(Tensor input32, WidenBFloat16(input));
        WEFT_ASSIGN_OR_RETURN(Tensor grad32, WidenBFloat16(out_backprop));
        status = Run<float>(context, g, out_depth, input32, grad32, &output32);
      }
      WEFT_RETURN_IF_ERROR(status);
      return NarrowToBFloat16(output32, output);
    } else {
      return Run<T>(context, g, out_depth, input, out_backprop, output);
    }
  }

 private:
  // filter_grad (`output`, allocated, of U) from the input and out_backprop (of U, not empty).
  template <typename U>
  Status Run(OpKernelContext* context, const SpatialGeometry& g, int64_t out_depth,
             const Tensor& input, const Tensor& out_backprop, Tensor* output) {
    U* filter_grad = output->data<U>();
    if constexpr (std::is_same_v<U, float>) {
      if (ChooseConvAlgorithm(ConvPass::kBackpropFilter, g, out_depth, DataType::kFloat) ==
          ConvAlgorithm::kOneDnn) {
        // A case oneDNN has no kernel for falls back to im2col + GEMM.
        Status status =
            onednn_.BackpropFilter(context, g, out_depth, DataType::kFloat, input.data<float>(),
                                   out_backprop.data<float>(), filter_grad);
        if (!IsUnimplemented(status)) return status;
      }
    }

    const bool pointwise = IsPointwise(g);
    const ConvPlan plan = PlanConvChunks(g, sizeof(U), context->device()->intra_op_threads(),
                                         /*whole_images=*/false);
    WEFT_RETURN_IF_ERROR(CheckConvGemmFitsBlas(def(), g, out_depth, plan));
    const int64_t patch = g.patch_size();
    const int64_t filter_size = output->NumElements();
    // Task 0 sums into the output, task t > 0 into partial row t - 1.
    WEFT_ASSIGN_OR_RETURN(
        Tensor partial,
        Tensor::Allocate(DataTypeToEnum<U>::value, TensorShape({plan.num_tasks - 1, filter_size})));
    WEFT_ASSIGN_OR_RETURN(Tensor col, AllocateColumnBuffers<U>(plan, g, pointwise));
    const U* in = input.data<U>();
    const U* grad = out_backprop.data<U>();
    RunChunks(context, plan, [&](int64_t first, int64_t last, int64_t task, bool first_of_task) {
      const U* patches = ChunkPatches(context, plan, g, pointwise, in, col, first, last, task);
      U* sum = task == 0 ? filter_grad : partial.data<U>() + (task - 1) * filter_size;
      Gemm(
          GemmDims{
              .m = patch, .n = out_depth, .k = (last - first) * g.out_cols, .transpose_a = true},
          U(1), patches, patch, grad + first * g.out_cols * out_depth, out_depth,
          first_of_task ? U(0) : U(1), sum, out_depth);
    });
    for (int64_t task = 1; task < plan.num_tasks; ++task) {
      const U* part = partial.data<U>() + (task - 1) * filter_size;
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
  RegisterForType<bfloat16>(registry);
}

}  // namespace weft::kernels
