// Const and Placeholder kernels. Const hands out the tensor of its `value` attr every step without
// copying it (its buffer stays shared, so no consumer ever writes into it); on a device with memory
// of its own the value is copied there once, when the kernel is built. Placeholder only runs
// when a step forgot to feed it: the runtime replaces fed placeholders, so its kernel always fails.
#include "weft/framework/copy_tensor.h"
#include "weft/framework/device_base.h"
#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/array/array_util.h"

namespace weft::kernels::array {
namespace {

class ConstOp final : public OpKernel {
 public:
  explicit ConstOp(OpKernelConstruction* context) : OpKernel(context) {
    DataType dtype;
    Status status = context->GetAttr("dtype", &dtype);
    if (status.ok()) status = context->GetAttr("value", &value_);
    if (status.ok() && value_.dtype() != dtype) {
      status = NodeError(*this, "value is a ", DataTypeName(value_.dtype()),
                         " tensor, but dtype is ", DataTypeName(dtype));
    }
    if (status.ok() && !context->device()->HasHostMemory()) {
      StatusOr<Tensor> on_device =
          CopyTensor(/*src_device=*/nullptr, context->device(),
                     {.on_host = output_memory_type(0) == MemoryType::kHost}, value_);
      if (on_device.ok()) {
        value_ = std::move(on_device).value();
      } else {
        status = on_device.status();
      }
    }
    context->SetStatus(status);
  }

  Status Compute(OpKernelContext* context) override { return context->SetOutput(0, value_); }
  bool IsCheap() const override { return true; }

 private:
  Tensor value_;
};

class PlaceholderOp final : public OpKernel {
 public:
  explicit PlaceholderOp(OpKernelConstruction* context) : OpKernel(context) {
    Status status = context->GetAttr("dtype", &dtype_);
    if (status.ok()) status = context->GetAttr("shape", &shape_);
    context->SetStatus(status);
  }

  Status Compute(OpKernelContext*) override {
    return NodeError(*this, "You must feed a value for placeholder '", name(), "' with dtype ",
                     DataTypeName(dtype_), " and shape ", shape_.DebugString());
  }
  bool IsCheap() const override { return true; }

 private:
  DataType dtype_ = DataType::kInvalid;
  PartialShape shape_;
};

}  // namespace

void RegisterConstKernels(KernelRegistry& registry) {
  registry.Register<ConstOp>(KernelDef("Const", "CPU").TypeConstraint("dtype", ArrayDataTypes()));
  registry.Register<PlaceholderOp>(KernelDef("Placeholder", "CPU"));
}

}  // namespace weft::kernels::array
