// Reshape, ExpandDims and Squeeze kernels. All three only relabel the dimensions: the output is a
// view of the input's buffer (Tensor::Reshaped), never a copy.
#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/array/array_util.h"

namespace weft::kernels::array {
namespace {

// shape: [d0, d1, ...] with at most one -1, inferred from the input's element count.
class ReshapeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    std::vector<int64_t> dims;
    WEFT_RETURN_IF_ERROR(ReadIndices(*this, context->input(1), "shape", &dims));
    auto mismatch = [&] {
      return NodeError(*this, "cannot reshape a tensor of shape ", input.shape(), " (",
                       input.NumElements(), " elements) into shape [", StrJoin(dims, ","), "]");
    };
    int unknown = -1;
    std::vector<int64_t> known = dims;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == -1 && unknown < 0) {
        unknown = static_cast<int>(i);
        known[i] = 1;
      } else if (dims[i] < 0) {
        return NodeError(*this, "requested shape [", StrJoin(dims, ","),
                         "] has a negative size or more than one -1");
      }
    }
    StatusOr<TensorShape> known_shape = TensorShape::Create(known);
    if (!known_shape.ok()) return mismatch();
    int64_t product = known_shape->num_elements();
    if (unknown >= 0) {
      if (product == 0 || input.NumElements() % product != 0) return mismatch();
      known[unknown] = input.NumElements() / product;
    } else if (product != input.NumElements()) {
      return mismatch();
    }
    return context->SetOutput(0, input.Reshaped(TensorShape(std::move(known))));
  }
  bool IsCheap() const override { return true; }
};

// dim: a scalar (or one-element vector) in [-rank-1, rank]; a 1 is inserted there.
class ExpandDimsOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    const Tensor& dim_tensor = context->input(1);
    if (dim_tensor.NumElements() != 1) {
      return NodeError(*this, "dim must hold one value, but has shape ", dim_tensor.shape());
    }
    std::vector<int64_t> dim;
    WEFT_RETURN_IF_ERROR(ReadIndices(*this, dim_tensor.Reshaped(TensorShape({1})), "dim", &dim));
    const int rank = input.dims();
    int64_t d = dim[0];
    if (d < -rank - 1 || d > rank) {
      return NodeError(*this, "dim ", d, " is out of range [", -rank - 1, ", ", rank,
                       "] for shape ", input.shape());
    }
    if (d < 0) d += rank + 1;
    std::vector<int64_t> dims = input.shape().dim_sizes();
    dims.insert(dims.begin() + d, 1);
    return context->SetOutput(0, input.Reshaped(TensorShape(std::move(dims))));
  }
  bool IsCheap() const override { return true; }
};

// squeeze_dims: which size-1 dimensions to remove; empty removes every size-1 dimension.
class SqueezeOp final : public OpKernel {
 public:
  explicit SqueezeOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("squeeze_dims", &squeeze_dims_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    const int rank = input.dims();
    std::vector<bool> drop(rank, squeeze_dims_.empty());
    if (squeeze_dims_.empty()) {
      for (int i = 0; i < rank; ++i) drop[i] = input.dim_size(i) == 1;
    }
    for (int64_t d : squeeze_dims_) {
      if (d < -rank || d >= rank) {
        return NodeError(*this, "squeeze dimension ", d, " is out of range [", -rank, ", ", rank,
                         ") for shape ", input.shape());
      }
      if (d < 0) d += rank;
      if (input.dim_size(static_cast<int>(d)) != 1) {
        return NodeError(*this, "cannot squeeze dimension ", d, " of shape ", input.shape(),
                         ": its size is not 1");
      }
      drop[d] = true;
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) {
      if (!drop[i]) dims.push_back(input.dim_size(i));
    }
    return context->SetOutput(0, input.Reshaped(TensorShape(std::move(dims))));
  }
  bool IsCheap() const override { return true; }

 private:
  std::vector<int64_t> squeeze_dims_;
};

}  // namespace

void RegisterReshapeKernels(KernelRegistry& registry) {
  // Any dtype: the elements are never touched.
  registry.Register<ReshapeOp>(KernelDef("Reshape", "CPU"));
  registry.Register<ExpandDimsOp>(KernelDef("ExpandDims", "CPU"));
  registry.Register<SqueezeOp>(KernelDef("Squeeze", "CPU"));
}

}  // namespace weft::kernels::array
