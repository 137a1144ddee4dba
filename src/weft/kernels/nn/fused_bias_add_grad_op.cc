// _FusedBiasAddGrad on CPU (the op is in ops/nn_ops.cc; graph/fuse_ops.cc makes it): under the
// mixed_bfloat16 policy a layer's gradient g [rows, C] is read twice after it is written, once by
// BiasAddGrad and once by the Cast that rounds it for the product's gradients; with a GELU before
// the layer, g is itself GeluGrad's output, written only for those two. This kernel computes g a
// row at a time (from the GELU's gradient when asked), rounds it into the bfloat16 output and adds
// it to the column sums while the row is in cache: one read of the inputs instead of three passes.
// Blocks of rows are summed in parallel and the block sums added in a fixed order, so results do
// not depend on the thread count.
#include <algorithm>
#include <string>

#include "weft/core/bfloat16.h"
#include "weft/framework/node_def_util.h"
#include "weft/kernels/eigen_support.h"
#include "weft/kernels/nn/gelu_math.h"
#include "weft/kernels/nn/nn_kernels.h"
#include "weft/kernels/nn/sized_eval.h"
#include "weft/kernels/simd_math.h"

namespace weft::kernels {
namespace {

using RowMap = Eigen::Map<Eigen::ArrayXf>;
using ConstRowMap = Eigen::Map<const Eigen::ArrayXf>;

class FusedBiasAddGradOp final : public OpKernel {
 public:
  explicit FusedBiasAddGradOp(OpKernelConstruction* context) : OpKernel(context) {
    std::string activation;
    Status status = context->GetAttr("activation", &activation);
    if (status.ok()) status = context->GetAttr("approximate", &approximate_);
    gelu_ = activation == "Gelu";
    const size_t features = context->input_types().size() - 1;
    if (status.ok() && features != (gelu_ ? 1 : 0)) {
      status = InvalidArgument(FormatNodeForError(context->node_def()),
                               ": activation Gelu takes one features input and None takes none, "
                               "but ",
                               activation, " has ", features);
    }
    context->SetStatus(status);
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& gradient = context->input(0);
    if (gradient.dims() < 2) {
      return InvalidArgument(FormatNodeForError(def()),
                             ": out_backprop must have rank at least 2, but has shape ",
                             gradient.shape());
    }
    if (gelu_ && !(context->input(1).shape() == gradient.shape())) {
      return InvalidArgument(FormatNodeForError(def()),
                             ": out_backprop and features must have the same shape, but are ",
                             gradient.shape(), " and ", context->input(1).shape());
    }
    const int64_t channels = gradient.dim_size(gradient.dims() - 1);
    Tensor* backprop = nullptr;
    Tensor* bias_backprop = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, gradient.shape(), &backprop));
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(1, TensorShape({channels}), &bias_backprop));
    float* bias = bias_backprop->data<float>();
    std::fill_n(bias, channels, 0.0f);
    if (gradient.NumElements() == 0) return Status::OK();
    const int64_t rows = gradient.NumElements() / channels;
    const RowBlocks blocks = FixedRowBlocks(rows, channels);
    // Each block's column sums, then (as scratch) one row of g per block.
    WEFT_ASSIGN_OR_RETURN(
        Tensor scratch,
        context->AllocateTemp(DataType::kFloat, TensorShape({2, blocks.count, channels})));
    float* sums = scratch.data<float>();
    float* row_scratch = sums + blocks.count * channels;
    const float* in = gradient.data<float>();
    const float* features = gelu_ ? context->input(1).data<float>() : nullptr;
    bfloat16* out = backprop->data<bfloat16>();
    ParallelFor(context, blocks.count,
                static_cast<double>(blocks.rows_per_block * channels) * (gelu_ ? 60 : 3),
                [&](int64_t begin, int64_t end) {
                  for (int64_t block = begin; block < end; ++block) {
                    RowMap sum(sums + block * channels, channels);
                    sum.setZero();
                    float* g = row_scratch + block * channels;
                    const int64_t last = std::min(rows, (block + 1) * blocks.rows_per_block);
                    for (int64_t r = block * blocks.rows_per_block; r < last; ++r) {
                      const float* row = in + r * channels;
                      if (gelu_) {
                        GeluGradRow(row, features + r * channels, channels, g);
                        row = g;
                      }
                      sum += ConstRowMap(row, channels);
                      FloatToBFloat16({row, static_cast<size_t>(channels)}, out + r * channels);
                    }
                  }
                });
    for (int64_t block = 0; block < blocks.count; ++block) {
      RowMap(bias, channels) += ConstRowMap(sums + block * channels, channels);
    }
    return Status::OK();
  }

 private:
  // g[c] = gradient[c] * gelu'(features[c]), as GeluGrad computes it (on AVX-512 alike).
  void GeluGradRow(const float* gradient, const float* features, int64_t n, float* g) const {
    if (!approximate_ && simd::SimdMathIsAvailable()) {
      return simd::MultiplyByExactGeluSlope(gradient, features, n, g);
    }
    ConstRowMap dy(gradient, n), x(features, n);
    if (approximate_) {
      RowMap(g, n) = dy.binaryExpr(x, gelu::GeluGradFunctor<float, true>());
    } else {
      RowMap(g, n) = dy.binaryExpr(x, gelu::GeluGradFunctor<float, false>());
    }
  }

  bool gelu_ = false;
  bool approximate_ = false;
};

}  // namespace

void RegisterFusedBiasAddGradKernels(KernelRegistry& registry) {
  registry.Register<FusedBiasAddGradOp>(KernelDef("_FusedBiasAddGrad", "CPU"));
}

}  // namespace weft::kernels
