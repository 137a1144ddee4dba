// Conv2D on CPU, NHWC input and [KH, KW, Cin, Cout] filter:
//   output[n, oh, ow, co] = sum_{kh, kw, ci} input[n, oh*sh - pad_top + kh, ow*sw - pad_left + kw,
//   ci]
//                                            * filter[kh, kw, ci, co]
// computed chunk by chunk (see conv_common.h): im2col of a chunk of output rows into a small
// buffer, then one GEMM [rows, KH*KW*Cin] x [KH*KW*Cin, Cout] into the output. A 1x1 stride-1
// convolution skips im2col: the input rows are the patches. float32 convolutions run on oneDNN
// where conv_algorithm.h chooses it. The same kernel serves _FusedConv2D (graph/fuse_ops.h):
// oneDNN adds the bias and applies ReLU as it writes the output; im2col does it in one more pass.
#include <algorithm>
#include <type_traits>

#include "weft/kernels/bias_activation.h"
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
    const T* bias = nullptr;
    if (fused_) {
      WEFT_RETURN_IF_ERROR(CheckBias(def(), context->input(2), out_depth));
      bias = context->input(2).data<T>();
    }
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, g.OutputShape(out_depth), &output));
    if (output->NumElements() == 0) return Status::OK();
    const T* in = input.data<T>();
    const T* weights = filter.data<T>();
    T* out = output->data<T>();
    if constexpr (std::is_same_v<T, float>) {
      if (ChooseConvAlgorithm(ConvPass::kForward, g, out_depth, DataType::kFloat) ==
          ConvAlgorithm::kOneDnn) {
        // A case oneDNN has no kernel for falls back to im2col + GEMM.
        const ConvFusion fusion = !fused_                                 ? ConvFusion::kNone
                                  : activation_ == FusedActivation::kRelu ? ConvFusion::kBiasRelu
                                                                          : ConvFusion::kBias;
        Status status = onednn_.Forward(context, g, out_depth, in, weights, bias, fusion, out);
        if (!IsUnimplemented(status)) return status;
      }
    }

    const bool pointwise = IsPointwise(g);
    const ConvPlan plan = PlanConvChunks(g, sizeof(T), context->device()->intra_op_threads(),
                                         /*whole_images=*/false);
    WEFT_RETURN_IF_ERROR(CheckConvGemmFitsBlas(def(), g, out_depth, plan));
    WEFT_ASSIGN_OR_RETURN(Tensor col, AllocateColumnBuffers<T>(plan, g, pointwise));
    const int64_t patch = g.patch_size();
    RunChunks(context, plan, [&](int64_t first, int64_t last, int64_t task, bool) {
      const T* patches = ChunkPatches(context, plan, g, pointwise, in, col, first, last, task);
      Gemm(GemmDims{.m = (last - first) * g.out_cols, .n = out_depth, .k = patch}, T(1), patches,
           patch, weights, out_depth, T(0), out + first * g.out_cols * out_depth, out_depth);
    });
    if (fused_) {
      AddBiasAndActivation(context, out, output->NumElements() / out_depth, out_depth, bias,
                           activation_);
    }
    return Status::OK();
  }

 private:
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
}

}  // namespace weft::kernels
