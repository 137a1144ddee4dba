// Identity, StopGradient and NoOp kernels. Identity and StopGradient output their input's buffer
// (no copy); they differ only for gradients, which the graph layer handles.
#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/array/array_util.h"

namespace weft::kernels::array {
namespace {

class IdentityOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* context) override {
    return context->SetOutput(0, context->input(0));
  }
  bool IsCheap() const override { return true; }
};

class NoOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext*) override { return Status::OK(); }
  bool IsCheap() const override { return true; }
};

}  // namespace

void RegisterIdentityKernels(KernelRegistry& registry) {
  // Any dtype: forwarding never looks at the elements.
  registry.Register<IdentityOp>(KernelDef("Identity", "CPU"));
  registry.Register<IdentityOp>(KernelDef("StopGradient", "CPU"));
  registry.Register<NoOp>(KernelDef("NoOp", "CPU"));
}

}  // namespace weft::kernels::array
