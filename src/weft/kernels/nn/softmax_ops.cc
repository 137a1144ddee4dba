// Softmax and LogSoftmax on CPU over the last dimension of logits [..., C], numerically stable
// (the row maximum is subtracted before exponentiating):
//   Softmax:    exp(x - max) / sum(exp(x - max))
//   LogSoftmax: (x - max) - log(sum(exp(x - max)))
// Rows are independent: sharded over the intra-op threads, vectorised within a row by Eigen.
#include <cmath>

#include <Eigen/Core>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/eigen_support.h"
#include "weft/kernels/nn/nn_kernels.h"

namespace weft::kernels {
namespace {

template <typename T>
using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

template <typename T, bool kLog>
class SoftmaxOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& logits = context->input(0);
    if (logits.dims() < 1) {
      return InvalidArgument(FormatNodeForError(def()),
                             ": logits must have rank at least 1, but is a scalar");
    }
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->ForwardInputOrAllocateOutput({0}, 0, logits.shape(), &output));
    if (output->NumElements() == 0) return Status::OK();
    const int64_t classes = logits.dim_size(logits.dims() - 1);
    const int64_t rows = logits.NumElements() / classes;
    const T* in = logits.data<T>();
    T* out = output->data<T>();
    ParallelFor(context, rows, static_cast<double>(classes) * 20, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        ConstRow<T> x(in + r * classes, classes);
        Row<T> y(out + r * classes, classes);
        const T max = x.maxCoeff();
        y = x - max;
        if constexpr (kLog) {
          y -= std::log(y.exp().sum());
        } else {
          y = y.exp();
          y /= y.sum();
        }
      }
    });
    return Status::OK();
  }
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<SoftmaxOp<T, false>>(KernelDef("Softmax", "CPU").TypeConstraint<T>("T"));
  registry.Register<SoftmaxOp<T, true>>(KernelDef("LogSoftmax", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterSoftmaxKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
}

}  // namespace weft::kernels
