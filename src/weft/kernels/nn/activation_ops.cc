// Element-wise activations and their gradients on CPU, as Eigen expressions evaluated on the
// intra-op threads for large tensors (EvalSized): Relu, ReluGrad, Sigmoid, SigmoidGrad, Tanh,
// TanhGrad, Softplus. Outputs reuse an input buffer when no one else holds it.
#include "weft/framework/node_def_util.h"
#include "weft/kernels/eigen_support.h"
#include "weft/kernels/nn/nn_kernels.h"
#include "weft/kernels/nn/sized_eval.h"

namespace weft::kernels {
namespace {

template <typename T>
struct ReluFn {
  template <typename X>
  static auto Apply(const X& x) {
    return x.cwiseMax(T(0));
  }
};
template <typename T>
struct SigmoidFn {
  template <typename X>
  static auto Apply(const X& x) {
    return x.sigmoid();
  }
};
template <typename T>
struct TanhFn {
  template <typename X>
  static auto Apply(const X& x) {
    return x.tanh();
  }
};

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|): e^-|x| <= 1 never overflows, and log1p keeps the
// tail accurate where e^x is tiny next to 1.
template <typename T>
struct SoftplusFn {
  template <typename X>
  static auto Apply(const X& x) {
    return x.cwiseMax(T(0)) + (-x.abs()).exp().log1p();
  }
};

// Gradient functors take (a, b) = the op's two inputs in order.
template <typename T>
struct ReluGradFn {  // (gradients, features)
  template <typename X>
  static auto Apply(const X& gradients, const X& features) {
    return (features > features.constant(T(0))).select(gradients, gradients.constant(T(0)));
  }
};
template <typename T>
struct SigmoidGradFn {  // (y, dy)
  template <typename X>
  static auto Apply(const X& y, const X& dy) {
    return dy * y * (y.constant(T(1)) - y);
  }
};
template <typename T>
struct TanhGradFn {  // (y, dy)
  template <typename X>
  static auto Apply(const X& y, const X& dy) {
    return dy * (y.constant(T(1)) - y * y);
  }
};

template <typename T, typename Fn>
class UnaryOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->ForwardInputOrAllocateOutput({0}, 0, input.shape(), &output));
    EvalSized(context, output->NumElements(), Flat<T>(*output), Fn::Apply(Flat<T>(input)));
    return Status::OK();
  }
};

template <typename T, typename Fn>
class BinaryOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& a = context->input(0);
    const Tensor& b = context->input(1);
    if (!(a.shape() == b.shape())) {
      return InvalidArgument(FormatNodeForError(def()),
                             ": inputs must have the same shape, but are ", a.shape(), " and ",
                             b.shape());
    }
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->ForwardInputOrAllocateOutput({0, 1}, 0, a.shape(), &output));
    EvalSized(context, output->NumElements(), Flat<T>(*output), Fn::Apply(Flat<T>(a), Flat<T>(b)));
    return Status::OK();
  }
};

template <typename T>
void RegisterRelu(KernelRegistry& registry) {
  registry.Register<UnaryOp<T, ReluFn<T>>>(KernelDef("Relu", "CPU").TypeConstraint<T>("T"));
  registry.Register<BinaryOp<T, ReluGradFn<T>>>(
      KernelDef("ReluGrad", "CPU").TypeConstraint<T>("T"));
}

template <typename T>
void RegisterSmoothActivations(KernelRegistry& registry) {
  registry.Register<UnaryOp<T, SigmoidFn<T>>>(KernelDef("Sigmoid", "CPU").TypeConstraint<T>("T"));
  registry.Register<BinaryOp<T, SigmoidGradFn<T>>>(
      KernelDef("SigmoidGrad", "CPU").TypeConstraint<T>("T"));
  registry.Register<UnaryOp<T, TanhFn<T>>>(KernelDef("Tanh", "CPU").TypeConstraint<T>("T"));
  registry.Register<BinaryOp<T, TanhGradFn<T>>>(
      KernelDef("TanhGrad", "CPU").TypeConstraint<T>("T"));
  registry.Register<UnaryOp<T, SoftplusFn<T>>>(KernelDef("Softplus", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterActivationKernels(KernelRegistry& registry) {
  RegisterRelu<float>(registry);
  RegisterRelu<double>(registry);
  RegisterRelu<int32_t>(registry);
  RegisterRelu<int64_t>(registry);
  RegisterSmoothActivations<float>(registry);
  RegisterSmoothActivations<double>(registry);
}

}  // namespace weft::kernels
