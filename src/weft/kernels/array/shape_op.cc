// Shape, Size and Rank kernels: metadata of their input as int32 or int64 tensors. An int32
// output that cannot hold a dimension or element count is an InvalidArgument, not a wrap-around.
#include <limits>

#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/array/array_util.h"

namespace weft::kernels::array {
namespace {

// Writes `values` into `out` (int32 or int64); fails when an int32 cannot hold one.
Status WriteIndices(const OpKernel& kernel, const std::vector<int64_t>& values, Tensor* out) {
  if (out->dtype() == DataType::kInt64) {
    std::copy(values.begin(), values.end(), out->data<int64_t>());
    return Status::OK();
  }
  int32_t* data = out->data<int32_t>();
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] > std::numeric_limits<int32_t>::max()) {
      return NodeError(kernel, "value ", values[i], " does not fit in int32; use out_type int64");
    }
    data[i] = static_cast<int32_t>(values[i]);
  }
  return Status::OK();
}

class ShapeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* context) override {
    const TensorShape& shape = context->input(0).shape();
    Tensor* out;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape({shape.dims()}), &out));
    return WriteIndices(*this, shape.dim_sizes(), out);
  }
  bool IsCheap() const override { return true; }
};

class SizeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* context) override {
    Tensor* out;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape(), &out));
    return WriteIndices(*this, {context->input(0).NumElements()}, out);
  }
  bool IsCheap() const override { return true; }
};

class RankOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* context) override {
    return context->SetOutput(0, Tensor::Scalar<int32_t>(context->input(0).dims()));
  }
  bool IsCheap() const override { return true; }
};

}  // namespace

void RegisterShapeKernels(KernelRegistry& registry) {
  // Any input dtype: only the shape is read. out_type is dispatched at run time.
  registry.Register<ShapeOp>(KernelDef("Shape", "CPU"));
  registry.Register<SizeOp>(KernelDef("Size", "CPU"));
  registry.Register<RankOp>(KernelDef("Rank", "CPU"));
}

}  // namespace weft::kernels::array
