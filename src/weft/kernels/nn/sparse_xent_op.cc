// SparseSoftmaxCrossEntropyWithLogits on CPU. For features [B, C] and labels [B] in [0, C):
//   loss[b]        = log(sum_c exp(x[b, c] - m_b)) + m_b - x[b, label_b],  m_b = max_c x[b, c]
//   backprop[b, c] = softmax(x[b])[c] - (c == label_b)
// Labels are all checked first; a label outside [0, C) is an InvalidArgument naming the row.
// backprop reuses the features buffer when no one else holds it.
#include <cmath>

#include <Eigen/Core>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/eigen_support.h"
#include "weft/kernels/nn/nn_kernels.h"

namespace weft::kernels {
namespace {

template <typename T, typename Label>
class SparseSoftmaxCrossEntropyOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& features = context->input(0);
    const Tensor& labels = context->input(1);
    if (features.dims() != 2) {
      return InvalidArgument(FormatNodeForError(def()),
                             ": features must be rank 2 [batch, classes], but has shape ",
                             features.shape());
    }
    if (labels.dims() != 1 || labels.dim_size(0) != features.dim_size(0)) {
      return InvalidArgument(FormatNodeForError(def()), ": labels must be a vector of ",
                             features.dim_size(0), " (the batch size of features ",
                             features.shape(), "), but has shape ", labels.shape());
    }
    const int64_t batch = features.dim_size(0), classes = features.dim_size(1);
    const Label* label = labels.data<Label>();
    for (int64_t b = 0; b < batch; ++b) {
      if (label[b] < 0 || label[b] >= classes) {
        return InvalidArgument(FormatNodeForError(def()), ": label ", int64_t{label[b]}, " at row ",
                               b, " is outside the valid range [0, ", classes, ")");
      }
    }
    Tensor* loss = nullptr;
    Tensor* backprop = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape({batch}), &loss));
    WEFT_RETURN_IF_ERROR(
        context->ForwardInputOrAllocateOutput({0}, 1, features.shape(), &backprop));
    if (batch == 0) return Status::OK();
    const T* x_data = features.data<T>();
    T* loss_data = loss->data<T>();
    T* grad_data = backprop->data<T>();
    ParallelFor(context, batch, static_cast<double>(classes) * 25, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> x(x_data + b * classes, classes);
        Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> grad(grad_data + b * classes, classes);
        const T max = x.maxCoeff();
        const T label_logit = x[label[b]];  // read before grad, which may alias x, is written
        grad = (x - max).exp();
        const T sum = grad.sum();
        loss_data[b] = std::log(sum) + max - label_logit;
        grad /= sum;
        grad[label[b]] -= T(1);
      }
    });
    return Status::OK();
  }
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<SparseSoftmaxCrossEntropyOp<T, int32_t>>(
      KernelDef("SparseSoftmaxCrossEntropyWithLogits", "CPU")
          .TypeConstraint<T>("T")
          .TypeConstraint("Tlabels", {DataType::kInt32}));
  registry.Register<SparseSoftmaxCrossEntropyOp<T, int64_t>>(
      KernelDef("SparseSoftmaxCrossEntropyWithLogits", "CPU")
          .TypeConstraint<T>("T")
          .TypeConstraint("Tlabels", {DataType::kInt64}));
}

}  // namespace

void RegisterSparseXentKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
}

}  // namespace weft::kernels
