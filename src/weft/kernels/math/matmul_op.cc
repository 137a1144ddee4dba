// CPU kernel for MatMul: a [M,K] (or [K,M] with transpose_a) times b [K,N] (or [N,K] with
// transpose_b) -> [M,N]. float32 and float64 call OpenBLAS's gemm, split over the intra-op threads
// (see kernels/gemm.h); bfloat16 accumulates in float32 through oneDNN where the CPU has bfloat16
// instructions, else in float32 GEMM (see kernels/gemm_bf16.h); int32 and int64 use Eigen's matrix
// product on the calling thread. _FusedMatMul adds a bias and an activation; _FusedBFloat16MatMul
// takes bfloat16 and writes float32, for a bfloat16 product widened at once.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include <Eigen/Core>
#include <cblas.h>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/bias_activation.h"
#include "weft/kernels/gemm.h"
#include "weft/kernels/gemm_bf16.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

template <typename T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// C = op(A) * op(B) for integer types. A is [a_rows, a_cols] as stored.
template <typename T>
void IntegerMatMul(const T* a, int64_t a_rows, int64_t a_cols, bool transpose_a, const T* b,
                   int64_t b_rows, int64_t b_cols, bool transpose_b, T* c, int64_t m, int64_t n) {
  Eigen::Map<const RowMajorMatrix<T>> am(a, a_rows, a_cols);
  Eigen::Map<const RowMajorMatrix<T>> bm(b, b_rows, b_cols);
  Eigen::Map<RowMajorMatrix<T>> cm(c, m, n);
  if (transpose_a && transpose_b) {
    cm.noalias() = am.transpose() * bm.transpose();
  } else if (transpose_a) {
    cm.noalias() = am.transpose() * bm;
  } else if (transpose_b) {
    cm.noalias() = am * bm.transpose();
  } else {
    cm.noalias() = am * bm;
  }
}

struct ProductDims {
  int64_t m = 0, n = 0, k = 0;
};

// The dimensions of op(a) * op(b), or an InvalidArgument naming `node` for inputs that are not
// matrices or whose inner dimensions differ.
StatusOr<ProductDims> CheckProduct(const proto::NodeDef& node, const Tensor& a, const Tensor& b,
                                   bool transpose_a, bool transpose_b) {
  if (a.dims() != 2 || b.dims() != 2) {
    return InvalidArgument(FormatNodeForError(node), ": inputs must be matrices, but are ",
                           a.shape(), " and ", b.shape());
  }
  ProductDims d{.m = a.dim_size(transpose_a ? 1 : 0),
                .n = b.dim_size(transpose_b ? 0 : 1),
                .k = a.dim_size(transpose_a ? 0 : 1)};
  const int64_t k_b = b.dim_size(transpose_b ? 1 : 0);
  if (d.k != k_b) {
    return InvalidArgument(FormatNodeForError(node), ": inner dimensions must be equal, but are ",
                           d.k, " and ", k_b, " for ", a.shape(), " x ", b.shape());
  }
  return d;
}

template <typename T>
class MatMulOp final : public OpKernel {
 public:
  explicit MatMulOp(OpKernelConstruction* context)
      : OpKernel(context), fused_(def().op() == "_FusedMatMul") {
    context->SetStatus(context->GetAttr("transpose_a", &transpose_a_));
    context->SetStatus(context->GetAttr("transpose_b", &transpose_b_));
    context->SetStatus(ReadFusedActivation(*context, fused_, &activation_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& a = context->input(0);
    const Tensor& b = context->input(1);
    WEFT_ASSIGN_OR_RETURN(const ProductDims dims,
                          CheckProduct(def(), a, b, transpose_a_, transpose_b_));
    const int64_t m = dims.m, n = dims.n, k = dims.k;
    if (fused_) WEFT_RETURN_IF_ERROR(CheckBias(def(), context->input(2), n));
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape({m, n}), &out));
    if (m == 0 || n == 0) return Status::OK();
    T* c = out->data<T>();
    if (k == 0) {
      std::fill_n(c, m * n, T{0});
    } else {
      WEFT_RETURN_IF_ERROR(Multiply(context, a, b, m, n, k, c));
    }
    if (fused_) {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        AddBiasAndActivation(context, c, m, n, context->input(2).data<T>(), activation_);
      }
    }
    return Status::OK();
  }

 private:
  Status Multiply(OpKernelContext* context, const Tensor& a, const Tensor& b, int64_t m, int64_t n,
                  int64_t k, T* c) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (!FitsBlasInt({m, n, k, a.dim_size(1), b.dim_size(1)})) {
        return InvalidArgument(FormatNodeForError(def()), ": dimensions of ", a.shape(), " x ",
                               b.shape(), " exceed what BLAS can index");
      }
      ParallelGemm(
          context,
          GemmDims{
              .m = m, .n = n, .k = k, .transpose_a = transpose_a_, .transpose_b = transpose_b_},
          T(1), a.data<T>(), a.dim_size(1), b.data<T>(), b.dim_size(1), T(0), c, n);
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      Status status = BFloat16Gemm(
          context,
          GemmDims{
              .m = m, .n = n, .k = k, .transpose_a = transpose_a_, .transpose_b = transpose_b_},
          a.data<T>(), a.dim_size(1), b.data<T>(), b.dim_size(1), c, n);
      if (!status.ok()) return status.WithContext(FormatNodeForError(def()));
    } else {
      IntegerMatMul(a.data<T>(), a.dim_size(0), a.dim_size(1), transpose_a_, b.data<T>(),
                    b.dim_size(0), b.dim_size(1), transpose_b_, c, m, n);
    }
    return Status::OK();
  }

  const bool fused_;
  bool transpose_a_ = false;
  bool transpose_b_ = false;
  FusedActivation activation_ = FusedActivation::kNone;
};

// _FusedBFloat16MatMul: the bfloat16 product written in float32 by the GEMM itself, the bias and
// activation applied as it writes (BFloat16GemmBiasActivation).
class FusedBFloat16MatMulOp final : public OpKernel {
 public:
  explicit FusedBFloat16MatMulOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("transpose_a", &transpose_a_));
    context->SetStatus(context->GetAttr("transpose_b", &transpose_b_));
    context->SetStatus(context->GetAttr("num_bias", &num_bias_));
    context->SetStatus(ReadFusedActivation(*context, /*fused=*/true, &activation_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& a = context->input(0);
    const Tensor& b = context->input(1);
    WEFT_ASSIGN_OR_RETURN(const ProductDims d,
                          CheckProduct(def(), a, b, transpose_a_, transpose_b_));
    if (num_bias_ > 1) {
      return InvalidArgument(FormatNodeForError(def()), ": num_bias must be 0 or 1, but is ",
                             num_bias_);
    }
    const bool with_bias = num_bias_ == 1;
    if (with_bias) WEFT_RETURN_IF_ERROR(CheckBias(def(), context->input(2), d.n));
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape({d.m, d.n}), &out));
    if (d.m == 0 || d.n == 0) return Status::OK();
    Status status = BFloat16GemmBiasActivation(
        context,
        GemmDims{
            .m = d.m, .n = d.n, .k = d.k, .transpose_a = transpose_a_, .transpose_b = transpose_b_},
        a.data<bfloat16>(), a.dim_size(1), b.data<bfloat16>(), b.dim_size(1),
        with_bias ? context->input(2).data<float>() : nullptr, activation_, out->data<float>());
    return status.ok() ? status : status.WithContext(FormatNodeForError(def()));
  }

 private:
  bool transpose_a_ = false;
  bool transpose_b_ = false;
  int64_t num_bias_ = 0;
  FusedActivation activation_ = FusedActivation::kNone;
};

}  // namespace

void RegisterMatMulKernels(KernelRegistry& registry) {
  registry.Register<MatMulOp<float>>(KernelDef("MatMul", "CPU").TypeConstraint<float>("T"));
  registry.Register<MatMulOp<double>>(KernelDef("MatMul", "CPU").TypeConstraint<double>("T"));
  registry.Register<MatMulOp<int32_t>>(KernelDef("MatMul", "CPU").TypeConstraint<int32_t>("T"));
  registry.Register<MatMulOp<int64_t>>(KernelDef("MatMul", "CPU").TypeConstraint<int64_t>("T"));
  registry.Register<MatMulOp<bfloat16>>(KernelDef("MatMul", "CPU").TypeConstraint<bfloat16>("T"));
  registry.Register<MatMulOp<float>>(KernelDef("_FusedMatMul", "CPU").TypeConstraint<float>("T"));
  registry.Register<MatMulOp<double>>(KernelDef("_FusedMatMul", "CPU").TypeConstraint<double>("T"));
  registry.Register<FusedBFloat16MatMulOp>(KernelDef("_FusedBFloat16MatMul", "CPU"));
}

}  // namespace weft::kernels
