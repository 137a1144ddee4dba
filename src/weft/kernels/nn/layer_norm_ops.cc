// FusedLayerNorm and FusedLayerNormGrad on CPU: each row of x [..., C] in one pass (Eigen arrays,
// vectorised within the row), rows sharded over the intra-op threads. With xhat = (x - mean) *
// inverse_std and g = y_backprop * scale, the gradient of a row is
//   x_backprop = inverse_std * (g - mean(g) - xhat * mean(g * xhat))
// and scale_backprop, offset_backprop are the sums over rows of y_backprop * xhat and y_backprop.
// Those sums are taken over fixed blocks of rows, then the blocks in order, so that the result
// does not depend on the number of threads.
#include <cmath>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "weft/core/bfloat16.h"
#include "weft/framework/node_def_util.h"
#include "weft/kernels/eigen_support.h"
#include "weft/kernels/nn/nn_kernels.h"

namespace weft::kernels {
namespace {

template <typename T>
using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

// Rows per block of the parameter gradients' partial sums.
constexpr int64_t kRowsPerBlock = 32;

// x [..., C] with C >= 1 (rows = its elements / C), and each of `vectors` [C]; names the input
// at fault.
Status CheckShapes(const proto::NodeDef& def, const Tensor& x,
                   std::initializer_list<std::pair<const char*, const Tensor*>> vectors) {
  if (x.dims() < 1) {
    return InvalidArgument(FormatNodeForError(def),
                           ": x must have rank at least 1, but is a scalar");
  }
  const int64_t channels = x.dim_size(x.dims() - 1);
  for (const auto& [name, vector] : vectors) {
    if (vector->dims() != 1 || vector->dim_size(0) != channels) {
      return InvalidArgument(FormatNodeForError(def), ": ", name, " must be [", channels,
                             "] (the last dimension of x ", x.shape().DebugString(), "), but is ",
                             vector->shape().DebugString());
    }
  }
  return Status::OK();
}

// The rows of x: its shape without the last dimension.
TensorShape RowsShape(const Tensor& x) {
  std::vector<int64_t> dims = x.shape().dim_sizes();
  dims.pop_back();
  return TensorShape(dims);
}

// FusedLayerNorm, and as _FusedLayerNorm (Out bfloat16, T float) with y rounded as it is written:
// each row is normalised in a float scratch row, then rounded into y.
template <typename T, typename Out = T>
class FusedLayerNormOp final : public OpKernel {
 public:
  explicit FusedLayerNormOp(OpKernelConstruction* context) : OpKernel(context) {
    float epsilon = 0;
    context->SetStatus(context->GetAttr("epsilon", &epsilon));
    epsilon_ = static_cast<T>(epsilon);
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    const Tensor& scale = context->input(1);
    const Tensor& offset = context->input(2);
    WEFT_RETURN_IF_ERROR(CheckShapes(def(), x, {{"scale", &scale}, {"offset", &offset}}));
    Tensor *y = nullptr, *mean = nullptr, *inverse_std = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, x.shape(), &y));
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(1, RowsShape(x), &mean));
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(2, RowsShape(x), &inverse_std));
    const int64_t channels = x.dim_size(x.dims() - 1);
    if (channels == 0) return Status::OK();
    const int64_t rows = x.NumElements() / channels;
    const T* in = x.data<T>();
    Out* out = y->data<Out>();
    T* means = mean->data<T>();
    T* inverse_stds = inverse_std->data<T>();
    ConstRow<T> gamma(scale.data<T>(), channels);
    ConstRow<T> beta(offset.data<T>(), channels);
    const T count = static_cast<T>(channels);
    ParallelFor(context, rows, static_cast<double>(channels) * 8, [&](int64_t begin, int64_t end) {
      std::vector<T> scratch(std::is_same_v<T, Out> ? 0 : channels);
      for (int64_t r = begin; r < end; ++r) {
        ConstRow<T> row(in + r * channels, channels);
        T* normalized_row;
        if constexpr (std::is_same_v<T, Out>) {
          normalized_row = out + r * channels;
        } else {
          normalized_row = scratch.data();
        }
        Row<T> normalized(normalized_row, channels);
        const T row_mean = row.sum() / count;
        normalized = row - row_mean;
        const T variance = normalized.square().sum() / count;
        const T inverse = T(1) / std::sqrt(variance + epsilon_);
        normalized = normalized * (gamma * inverse) + beta;
        if constexpr (!std::is_same_v<T, Out>) {
          FloatToBFloat16({normalized_row, static_cast<size_t>(channels)}, out + r * channels);
        }
        means[r] = row_mean;
        inverse_stds[r] = inverse;
      }
    });
    return Status::OK();
  }

 private:
  T epsilon_ = 0;
};

template <typename T>
class FusedLayerNormGradOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& dy = context->input(0);
    const Tensor& x = context->input(1);
    const Tensor& scale = context->input(2);
    const Tensor& mean = context->input(3);
    const Tensor& inverse_std = context->input(4);
    WEFT_RETURN_IF_ERROR(CheckShapes(def(), x, {{"scale", &scale}}));
    if (dy.shape() != x.shape()) {
      return InvalidArgument(FormatNodeForError(def()), ": y_backprop ", dy.shape().DebugString(),
                             " must have the shape of x ", x.shape().DebugString());
    }
    const TensorShape rows_shape = RowsShape(x);
    for (const auto& [name, stat] : {std::pair{"mean", &mean}, {"inverse_std", &inverse_std}}) {
      if (stat->shape() != rows_shape) {
        return InvalidArgument(FormatNodeForError(def()), ": ", name, " must be ",
                               rows_shape.DebugString(), " (x ", x.shape().DebugString(),
                               " without its last dimension), but is ",
                               stat->shape().DebugString());
      }
    }
    const int64_t channels = x.dim_size(x.dims() - 1);
    Tensor *dx = nullptr, *dscale = nullptr, *doffset = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, x.shape(), &dx));
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(1, TensorShape({channels}), &dscale));
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(2, TensorShape({channels}), &doffset));
    Row<T> scale_sum(dscale->data<T>(), channels);
    Row<T> offset_sum(doffset->data<T>(), channels);
    scale_sum.setZero();
    offset_sum.setZero();
    if (channels == 0 || x.NumElements() == 0) return Status::OK();
    const int64_t rows = x.NumElements() / channels;
    const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
    // Each block's partial sums: [blocks, 2, C] (scale's, then offset's).
    WEFT_ASSIGN_OR_RETURN(Tensor partial, Tensor::Allocate(DataTypeToEnum<T>::value,
                                                           TensorShape({blocks, 2, channels})));
    T* partials = partial.data<T>();
    ConstRow<T> gamma(scale.data<T>(), channels);
    const T count = static_cast<T>(channels);
    ParallelFor(context, blocks, static_cast<double>(channels * kRowsPerBlock) * 16,
                [&](int64_t first, int64_t last) {
                  Eigen::Array<T, Eigen::Dynamic, 1> xhat(channels), g(channels);
                  for (int64_t b = first; b < last; ++b) {
                    Row<T> block_scale(partials + b * 2 * channels, channels);
                    Row<T> block_offset(partials + (b * 2 + 1) * channels, channels);
                    block_scale.setZero();
                    block_offset.setZero();
                    const int64_t end = std::min(rows, (b + 1) * kRowsPerBlock);
                    for (int64_t r = b * kRowsPerBlock; r < end; ++r) {
                      const T inverse = inverse_std.data<T>()[r];
                      ConstRow<T> row(x.data<T>() + r * channels, channels);
                      ConstRow<T> grad(dy.data<T>() + r * channels, channels);
                      xhat = (row - mean.data<T>()[r]) * inverse;
                      g = grad * gamma;
                      const T mean_g = g.sum() / count;
                      const T mean_g_xhat = (g * xhat).sum() / count;
                      Row<T>(dx->data<T>() + r * channels, channels) =
                          inverse * (g - mean_g - xhat * mean_g_xhat);
                      block_scale += grad * xhat;
                      block_offset += grad;
                    }
                  }
                });
    for (int64_t b = 0; b < blocks; ++b) {
      scale_sum += ConstRow<T>(partials + b * 2 * channels, channels);
      offset_sum += ConstRow<T>(partials + (b * 2 + 1) * channels, channels);
    }
    return Status::OK();
  }
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<FusedLayerNormOp<T>>(KernelDef("FusedLayerNorm", "CPU").TypeConstraint<T>("T"));
  registry.Register<FusedLayerNormGradOp<T>>(
      KernelDef("FusedLayerNormGrad", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterLayerNormKernels(KernelRegistry& registry) {
  registry.Register<FusedLayerNormOp<float, bfloat16>>(KernelDef("_FusedLayerNorm", "CPU"));
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
}

}  // namespace weft::kernels
