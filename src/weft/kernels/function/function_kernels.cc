// _Arg and _Retval kernels: read the step's feeds from and write its fetches to the CallFrame.
#include "weft/framework/call_frame.h"
#include "weft/framework/node_def_util.h"
#include "weft/kernels/register_kernels.h"

namespace weft::kernels {
namespace {

class ArgOp final : public OpKernel {
 public:
  explicit ArgOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("index", &index_));
  }

  Status Compute(OpKernelContext* context) override {
    if (context->call_frame() == nullptr) {
      return FailedPrecondition(FormatNodeForError(def()), " runs without a call frame");
    }
    Tensor value;
    WEFT_RETURN_IF_ERROR(context->call_frame()->GetArg(index_, &value));
    return context->SetOutput(0, std::move(value));
  }
  bool IsCheap() const override { return true; }

 private:
  int index_ = 0;
};

class RetvalOp final : public OpKernel {
 public:
  explicit RetvalOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("index", &index_));
  }

  Status Compute(OpKernelContext* context) override {
    if (context->call_frame() == nullptr) {
      return FailedPrecondition(FormatNodeForError(def()), " runs without a call frame");
    }
    return context->call_frame()->SetRetval(index_, context->input(0));
  }
  bool IsCheap() const override { return true; }

 private:
  int index_ = 0;
};

}  // namespace

void RegisterFunctionKernels(KernelRegistry& registry) {
  registry.Register<ArgOp>(KernelDef("_Arg", "CPU"));
  registry.Register<RetvalOp>(KernelDef("_Retval", "CPU"));
}

}  // namespace weft::kernels
