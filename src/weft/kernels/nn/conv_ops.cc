// Conv2D on CPU, NHWC input and [KH, KW, Cin, Cout] filter:
//   output[n, oh, ow, co] = sum_{kh, kw, ci} input[n, oh*sh - pad_top + kh, ow*sw - pad_left + kw,
//   ci]
//                                            * filter[kh, kw, ci, co]
// computed chunk by chunk (see conv_common.h): im2col of a chunk of output rows into a small
// buffer, then one GEMM [rows, KH*KW*Cin] x [KH*KW*Cin, Cout] into the output. A 1x1 stride-1
// convolution skips im2col: the input rows are the patches. float32 convolutions run on oneDNN
// where conv_algorithm.h chooses it; bfloat16 ones on oneDNN where the CPU multiplies bfloat16,
// else in float32 and rounded. The same kernel serves _FusedConv2D (graph/fuse_ops.h):
// oneDNN adds the bias and applies ReLU as it writes the output; im2col does it in one more pass.
#include <algorithm>
#include <type_traits>

#include "weft/kernels/bias_activation.h"
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
class Conv2DOp final : public OpKernel {
 public:
  explicit Conv2DOp(OpKernelConstruction* context)
      : OpKernel(context), fused_(def().op() == "_FusedConv2D") {
    context->SetStatus(ReadConvAttrs(*context, &attrs_));
    context->SetStatus(ReadFusedActivation(*context, fused_, &activation_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    const Tensor& filter = context->input(1);
    WEFT_RETURN_IF_ERROR(CheckConvShapes(def(), input.shape(), filter.shape()));
    WEFT_ASSIGN_OR_RETURN(SpatialGeometry g,
                          ComputeSpatialGeometry(def(), input.shape(), filter.dim_size(0),
                                                 filter.dim_size(1), attrs_));
    const int64_t out_depth = filter.dim_size(3);
    if (fused_) WEFT_RETURN_IF_ERROR(CheckBias(def(), context->input(2), out_depth));
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, g.OutputShape(out_depth), &output));
    if (output->NumElements() == 0) return Status::OK();
    if constexpr (std::is_same_v<T, bfloat16>) {
      return ComputeBFloat16(context, g, out_depth, input, filter, output);
    } else {
      return Run<T>(context, g, out_depth, input.data<T>(), filter.data<T>(),
                    fused_ ? context->input(2).data<T>() : nullptr, output->data<T>(),
                    output->NumElements());
    }
  }

 private:
  ConvFusion Fusion() const {
    return !fused_                                 ? ConvFusion::kNone
           : activation_ == FusedActivation::kRelu ? ConvFusion::kBiasRelu
                                                   : ConvFusion::kBias;
  }

  // The convolution of `in` and `weights` (plus `bias` and the activation when fused) into `out`
  // (`size` elements).
  template <typename U>
  Status Run(OpKernelContext* context, const SpatialGeometry& g, int64_t out_depth, const U* in,
             const U* weights, const U* bias, U* out, int64_t size) {
    if constexpr (std::is_same_v<U, float>) {
      if (ChooseConvAlgorithm(ConvPass::kForward, g, out_depth, DataType::kFloat) ==
          ConvAlgorithm::kOneDnn) {
        // A case oneDNN has no kernel for falls back to im2col + GEMM.
        Status status = onednn_.Forward(context, g, out_depth, DataType::kFloat, in, weights, bias,
                                        Fusion(), out);
        if (!IsUnimplemented(status)) return status;
      }
    }

    const bool pointwise = IsPointwise(g);
    const ConvPlan plan = PlanConvChunks(g, sizeof(U), context->device()->intra_op_threads(),
                                         /*whole_images=*/false);
    WEFT_RETURN_IF_ERROR(CheckConvGemmFitsBlas(def(), g, out_depth, plan));
    WEFT_ASSIGN_OR_RETURN(Tensor col, AllocateColumnBuffers<U>(plan, g, pointwise));
    const int64_t patch = g.patch_size();
    RunChunks(context, plan, [&](int64_t first, int64_t last, int64_t task, bool) {
      const U* patches = ChunkPatches(context, plan, g, pointwise, in, col, first, last, task);
      Gemm(GemmDims{.m = (last - first) * g.out_cols, .n = out_depth, .k = patch}, U(1), patches,
           patch, weights, out_depth, U(0), out + first * g.out_cols * out_depth, out_depth);
    });
    if (fused_) AddBiasAndActivation(context, out, size / out_depth, out_depth, bias, activation_);
    return Status::OK();
  }

  // bfloat16: oneDNN's bfloat16 convolution where the CPU has the instructions (float32
  // accumulation, each output rounded once), else the float32 convolution of the widened operands,
  // rounded.
  Status ComputeBFloat16(OpKernelContext* context, const SpatialGeometry& g, int64_t out_depth,
                         const Tensor& input, const Tensor& filter, Tensor* output) {
    Tensor bias;
    if (fused_) {
      WEFT_ASSIGN_OR_RETURN(bias, WidenBFloat16(context->input(2)));
    }
    const float* bias_data = fused_ ? bias.data<float>() : nullptr;
    if (BFloat16GemmIsNative() && OneDnnConvolution::Supports(g, out_depth)) {
      Status status =
          onednn_.Forward(context, g, out_depth, DataType::kBFloat16, input.data<bfloat16>(),
                          filter.data<bfloat16>(), bias_data, Fusion(), output->data<bfloat16>());
      if (!IsUnimplemented(status)) return status;
    }
    WEFT_ASSIGN_OR_RETURN(Tensor input32, WidenBFloat16(input));
    WEFT_ASSIGN_OR_RETURN(Tensor filter32, WidenBFloat16(filter));
    WEFT_ASSIGN_OR_RETURN(Tensor output32, Tensor::Allocate(DataType::kFloat, output->shape()));
    WEFT_RETURN_IF_ERROR(Run<float>(context, g, out_depth, input32.data<float>(),
                                    filter32.data<float>(), bias_data, output32.data<float>(),
                                    output32.NumElements()));
    return NarrowToBFloat16(output32, output);
  }

  const bool fused_;
  WindowAttrs attrs_;
  FusedActivation activation_ = FusedActivation::kNone;
  OneDnnConvolution onednn_;
};

}  // namespace

void RegisterConvKernels(KernelRegistry& registry) {
  registry.Register<Conv2DOp<float>>(KernelDef("Conv2D", "CPU").TypeConstraint<float>("T"));
  registry.Register<Conv2DOp<double>>(KernelDef("Conv2D", "CPU").TypeConstraint<double>("T"));
  registry.Register<Conv2DOp<float>>(KernelDef("_FusedConv2D", "CPU").TypeConstraint<float>("T"));
  registry.Register<Conv2DOp<double>>(KernelDef("_FusedConv2D", "CPU").TypeConstraint<double>("T"));
  registry.Register<Conv2DOp<bfloat16>>(KernelDef("Conv2D", "CPU").TypeConstraint<bfloat16>("T"));
  registry.Register<Conv2DOp<bfloat16>>(
      KernelDef("_FusedConv2D", "CPU").TypeConstraint<bfloat16>("T"));
}

}  // namespace weft::kernels
