// Fill, ZerosLike and OnesLike kernels: a tensor with every element set to one value. Large
// outputs are filled on the intra-op threads; ZerosLike/OnesLike reuse their input's buffer when
// no one else holds it.
#include <algorithm>

#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/array/array_util.h"
#include "weft/kernels/eigen_support.h"

namespace weft::kernels::array {
namespace {

template <typename T>
void SetAll(OpKernelContext* context, Tensor* out, T value) {
  if (out->NumElements() >= kMinParallelElements) {
    auto flat = Flat<T>(*out);
    flat.device(EigenDevice(context)) = flat.constant(value);
  } else {
    std::fill_n(out->data<T>(), out->NumElements(), value);
  }
}

// dims: [rank] int32/int64 sizes; value: a T scalar.
template <typename T>
class FillOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    std::vector<int64_t> dims;
    WEFT_RETURN_IF_ERROR(ReadIndices(*this, context->input(0), "dims", &dims));
    const Tensor& value = context->input(1);
    if (value.dims() != 0) {
      return NodeError(*this, "value must be a scalar, but has shape ", value.shape());
    }
    StatusOr<TensorShape> shape = TensorShape::Create(dims);
    if (!shape.ok()) {
      return NodeError(*this, "bad dims [", StrJoin(dims, ","), "]: ", shape.status().message());
    }
    Tensor* out;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, *shape, &out));
    SetAll<T>(context, out, *value.data<T>());
    return Status::OK();
  }
};

// ZerosLike (kValue 0) and OnesLike (kValue 1).
template <typename T, int kValue>
class ConstantLikeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    Tensor* out;
    WEFT_RETURN_IF_ERROR(
        context->ForwardInputOrAllocateOutput({0}, 0, context->input(0).shape(), &out));
    SetAll<T>(context, out, static_cast<T>(kValue));
    return Status::OK();
  }
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<FillOp<T>>(KernelDef("Fill", "CPU").TypeConstraint<T>("T"));
  registry.Register<ConstantLikeOp<T, 0>>(KernelDef("ZerosLike", "CPU").TypeConstraint<T>("T"));
  registry.Register<ConstantLikeOp<T, 1>>(KernelDef("OnesLike", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterFillKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
  RegisterForType<int32_t>(registry);
  RegisterForType<int64_t>(registry);
  RegisterForType<uint8_t>(registry);
  RegisterForType<bool>(registry);
  RegisterForType<bfloat16>(registry);
}

}  // namespace weft::kernels::array
