// BiasAdd and BiasAddGrad on CPU for NHWC data, seen as a matrix [rows, C]:
//   BiasAdd:     output[r, c] = value[r, c] + bias[c]   (in place when value's buffer is free)
//   BiasAddGrad: output[c] = sum_r out_backprop[r, c]   (blocks of rows summed in parallel, then
//                                                        the block sums added in a fixed order)
#include <algorithm>
#include <string>
#include <vector>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/eigen_support.h"
#include "weft/kernels/nn/nn_kernels.h"
#include "weft/kernels/nn/sized_eval.h"

namespace weft::kernels {
namespace {

Status CheckNhwc(OpKernelConstruction* context) {
  std::string data_format;
  WEFT_RETURN_IF_ERROR(context->GetAttr("data_format", &data_format));
  if (data_format != "NHWC") {
    return InvalidArgument(FormatNodeForError(context->node_def()), ": data_format ", data_format,
                           " is not supported; use NHWC");
  }
  return Status::OK();
}

Status CheckAtLeastMatrix(const proto::NodeDef& node, const Tensor& t, std::string_view what) {
  if (t.dims() < 2) {
    return InvalidArgument(FormatNodeForError(node), ": ", what,
                           " must have rank at least 2, but has shape ", t.shape());
  }
  return Status::OK();
}

template <typename T>
class BiasAddOp final : public OpKernel {
 public:
  explicit BiasAddOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(CheckNhwc(context));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& value = context->input(0);
    const Tensor& bias = context->input(1);
    WEFT_RETURN_IF_ERROR(CheckAtLeastMatrix(def(), value, "value"));
    const int64_t channels = value.dim_size(value.dims() - 1);
    if (bias.dims() != 1 || bias.dim_size(0) != channels) {
      return InvalidArgument(FormatNodeForError(def()), ": bias must be a vector of ", channels,
                             " elements (the last dimension of value ", value.shape(),
                             "), but has shape ", bias.shape());
    }
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->ForwardInputOrAllocateOutput({0}, 0, value.shape(), &output));
    if (output->NumElements() == 0) return Status::OK();
    const T* in = value.data<T>();
    const T* b = bias.data<T>();
    T* out = output->data<T>();
    const int64_t rows = value.NumElements() / channels;
    ParallelFor(context, rows, static_cast<double>(channels), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* src = in + r * channels;
        T* dst = out + r * channels;
        for (int64_t c = 0; c < channels; ++c) dst[c] = src[c] + b[c];
      }
    });
    return Status::OK();
  }
};

template <typename T>
class BiasAddGradOp final : public OpKernel {
 public:
  explicit BiasAddGradOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(CheckNhwc(context));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& grad = context->input(0);
    WEFT_RETURN_IF_ERROR(CheckAtLeastMatrix(def(), grad, "out_backprop"));
    const int64_t channels = grad.dim_size(grad.dims() - 1);
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape({channels}), &output));
    T* out = output->data<T>();
    std::fill(out, out + channels, T(0));
    if (grad.NumElements() == 0) return Status::OK();
    const int64_t rows = grad.NumElements() / channels;
    const T* in = grad.data<T>();
    // The block sums live in a temporary tensor, whose large blocks the allocator keeps.
    const RowBlocks blocks = FixedRowBlocks(rows, channels);
    WEFT_ASSIGN_OR_RETURN(
        Tensor partial,
        context->AllocateTemp(DataTypeToEnum<T>::value, TensorShape({blocks.count, channels})));
    T* sums = partial.data<T>();
    ParallelFor(context, blocks.count, static_cast<double>(blocks.rows_per_block * channels),
                [&](int64_t begin, int64_t end) {
                  for (int64_t block = begin; block < end; ++block) {
                    T* sum = sums + block * channels;
                    std::fill_n(sum, channels, T(0));
                    const int64_t last = std::min(rows, (block + 1) * blocks.rows_per_block);
                    for (int64_t r = block * blocks.rows_per_block; r < last; ++r) {
                      const T* src = in + r * channels;
                      for (int64_t c = 0; c < channels; ++c) sum[c] += src[c];
                    }
                  }
                });
    for (int64_t block = 0; block < blocks.count; ++block) {
      for (int64_t c = 0; c < channels; ++c) out[c] += sums[block * channels + c];
    }
    return Status::OK();
  }
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<BiasAddOp<T>>(KernelDef("BiasAdd", "CPU").TypeConstraint<T>("T"));
  registry.Register<BiasAddGradOp<T>>(KernelDef("BiasAddGrad", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterBiasAddKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
  RegisterForType<int32_t>(registry);
  RegisterForType<int64_t>(registry);
}

}  // namespace weft::kernels
