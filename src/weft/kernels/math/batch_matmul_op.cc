// CPU kernel for BatchMatMulV2: x [..., M, K] (or [..., K, M] with adj_x) times y [..., K, N] (or
// [..., N, K] with adj_y) -> [B..., M, N], B the NumPy broadcast of the batch dims of x and y. Each
// batch entry is one GEMM through kernels/gemm.h, as in MatMul (kernels/gemm_bf16.h for bfloat16,
// Eigen for integers); a broadcast operand is read in place through per-entry offsets, never
// copied.
#include <algorithm>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/gemm.h"
#include "weft/kernels/gemm_bf16.h"
#include "weft/kernels/math/math_kernels.h"

namespace weft::kernels {
namespace {

template <typename T>
constexpr bool kIsBlasType = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <typename T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The output batch dims and, per output batch entry, the matrix of x and of y it multiplies.
struct BatchPlan {
  std::vector<int64_t> dims;  // the broadcast batch dims
  int64_t count = 1;          // their product
  // Matrix indices into x and y, one per output entry; empty when that side's batch dims equal
  // the output's (entry b reads matrix b).
  std::vector<int64_t> x_index;
  std::vector<int64_t> y_index;
};

std::vector<int64_t> BatchDims(const Tensor& t) {
  const std::vector<int64_t>& dims = t.shape().dim_sizes();
  return std::vector<int64_t>(dims.begin(), dims.end() - 2);
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t product = 1;
  for (int64_t d : dims) product *= d;
  return product;
}

// For each entry of `out` (row-major), the flat index of the entry of `side` it broadcasts from;
// `side` is right-aligned to `out` and broadcast where its dim is 1. An odometer over `out` keeps
// this to additions.
std::vector<int64_t> BroadcastIndex(const std::vector<int64_t>& side,
                                    const std::vector<int64_t>& out, int64_t count) {
  const int rank = static_cast<int>(out.size());
  const int pad = rank - static_cast<int>(side.size());
  std::vector<int64_t> stride(rank, 0);
  for (int64_t d = rank - 1, s = 1; d >= pad; --d) {
    const int64_t size = side[d - pad];
    stride[d] = size == 1 ? 0 : s;
    s *= size;
  }
  std::vector<int64_t> index(count);
  std::vector<int64_t> counter(rank, 0);
  int64_t offset = 0;
  for (int64_t b = 0; b < count; ++b) {
    index[b] = offset;
    for (int d = rank - 1; d >= 0; --d) {
      offset += stride[d];
      if (++counter[d] < out[d]) break;
      offset -= stride[d] * out[d];
      counter[d] = 0;
    }
  }
  return index;
}

// The plan for batch dims `xb` and `yb`; false when they cannot broadcast.
bool MakeBatchPlan(const std::vector<int64_t>& xb, const std::vector<int64_t>& yb,
                   BatchPlan* plan) {
  const size_t rank = std::max(xb.size(), yb.size());
  plan->dims.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t dx = i < rank - xb.size() ? 1 : xb[i - (rank - xb.size())];
    const int64_t dy = i < rank - yb.size() ? 1 : yb[i - (rank - yb.size())];
    if (dx != dy && dx != 1 && dy != 1) return false;
    plan->dims[i] = dx == 1 ? dy : dx;
  }
  plan->count = Product(plan->dims);
  // Broadcasting only widens size-1 dims, so equal counts mean equal dims (or an empty output).
  if (Product(xb) != plan->count) plan->x_index = BroadcastIndex(xb, plan->dims, plan->count);
  if (Product(yb) != plan->count) plan->y_index = BroadcastIndex(yb, plan->dims, plan->count);
  return true;
}

template <typename T>
class BatchMatMulOp final : public OpKernel {
 public:
  explicit BatchMatMulOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("adj_x", &adj_x_));
    context->SetStatus(context->GetAttr("adj_y", &adj_y_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    const Tensor& y = context->input(1);
    if (x.dims() < 2 || y.dims() < 2) {
      return InvalidArgument(FormatNodeForError(def()),
                             ": inputs must have rank at least 2, but are ", x.shape(), " and ",
                             y.shape());
    }
    const int rx = x.dims(), ry = y.dims();
    const int64_t m = x.dim_size(rx - (adj_x_ ? 1 : 2)), k = x.dim_size(rx - (adj_x_ ? 2 : 1));
    const int64_t k_y = y.dim_size(ry - (adj_y_ ? 1 : 2)), n = y.dim_size(ry - (adj_y_ ? 2 : 1));
    if (k != k_y) {
      return InvalidArgument(
          FormatNodeForError(def()), ": inner dimensions must be equal, but are ", k, " and ", k_y,
          " for ", x.shape(), " x ", y.shape(),
          adj_x_ || adj_y_ ? StrCat(" (adj_x=", adj_x_, ", adj_y=", adj_y_, ")") : "");
    }
    BatchPlan plan;
    if (!MakeBatchPlan(BatchDims(x), BatchDims(y), &plan)) {
      return InvalidArgument(FormatNodeForError(def()), ": batch dimensions of ", x.shape(),
                             " and ", y.shape(), " cannot be broadcast together");
    }
    if constexpr (kIsBlasType<T>) {
      if (!FitsBlasInt({m, n, k, x.dim_size(rx - 1), y.dim_size(ry - 1)})) {
        return InvalidArgument(FormatNodeForError(def()), ": dimensions of ", x.shape(), " x ",
                               y.shape(), " exceed what BLAS can index");
      }
    }
    std::vector<int64_t> out_dims = plan.dims;
    out_dims.push_back(m);
    out_dims.push_back(n);
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape(out_dims), &out));
    if (plan.count == 0 || m == 0 || n == 0) return Status::OK();
    if (k == 0) {
      std::fill_n(out->data<T>(), out->NumElements(), T{0});
      return Status::OK();
    }
    const GemmDims d{.m = m, .n = n, .k = k, .transpose_a = adj_x_, .transpose_b = adj_y_};
    if constexpr (std::is_same_v<T, bfloat16>) {
      Status status = MultiplyBFloat16(context, x, y, plan, d, out->data<T>());
      return status.ok() ? status : status.WithContext(FormatNodeForError(def()));
    } else {
      Multiply(context, x, y, plan, d, out->data<T>());
      return Status::OK();
    }
  }

 private:
  // Fills `out` [count, M, N] from the plan's matrices of x and y. Fewer large products than
  // threads are each split over the intra-op threads (ParallelGemm); otherwise each product runs
  // whole on one thread and the batch is split (DLRM's 512 [27,16] x [16,27] take ~0.7 us each,
  // less than splitting one would cost).
  void Multiply(OpKernelContext* context, const Tensor& x, const Tensor& y, const BatchPlan& plan,
                const GemmDims& d, T* out) const {
    const T* x_data = x.data<T>();
    const T* y_data = y.data<T>();
    const int64_t x_size = d.m * d.k, y_size = d.k * d.n, out_size = d.m * d.n;
    const int64_t lda = x.dim_size(x.dims() - 1), ldb = y.dim_size(y.dims() - 1);
    auto x_matrix = [&](int64_t b) {
      return x_data + (plan.x_index.empty() ? b : plan.x_index[b]) * x_size;
    };
    auto y_matrix = [&](int64_t b) {
      return y_data + (plan.y_index.empty() ? b : plan.y_index[b]) * y_size;
    };
    const int64_t threads = context->device()->intra_op_threads();
    const int64_t work = d.m * d.n * d.k;
    if constexpr (kIsBlasType<T>) {
      if (plan.count < threads && work >= kMinParallelGemmWork) {
        for (int64_t b = 0; b < plan.count; ++b) {
          ParallelGemm(context, d, T(1), x_matrix(b), lda, y_matrix(b), ldb, T(0),
                       out + b * out_size, d.n);
        }
        return;
      }
    }
    auto run = [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        MultiplyOne(d, x_matrix(b), lda, y_matrix(b), ldb, out + b * out_size);
      }
    };
    // OpenBLAS with threads of its own takes one double GEMM at a time (gemm.h).
    const bool concurrent = threads > 1 && (!std::is_same_v<T, double> || BlasIsSingleThreaded());
    if (!concurrent || plan.count == 1) return run(0, plan.count);
    // Cycles per product: a small GEMM runs at a few multiply-adds per cycle, plus a call's fixed
    // cost.
    ParallelFor(context, plan.count, static_cast<double>(work) / 4 + 1000, run);
  }

  // Multiply's split for bfloat16 (gemm_bf16.h), whose products may fail.
  Status MultiplyBFloat16(OpKernelContext* context, const Tensor& x, const Tensor& y,
                          const BatchPlan& plan, const GemmDims& d, bfloat16* out) const {
    const bfloat16* x_data = x.data<bfloat16>();
    const bfloat16* y_data = y.data<bfloat16>();
    const int64_t lda = x.dim_size(x.dims() - 1), ldb = y.dim_size(y.dims() - 1);
    const int64_t threads = context->device()->intra_op_threads();
    const int64_t work = d.m * d.n * d.k;
    const bool split_each = plan.count < threads && work >= kMinParallelGemmWork;
    std::vector<Status> statuses(plan.count);
    auto run = [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const int64_t xb = plan.x_index.empty() ? b : plan.x_index[b];
        const int64_t yb = plan.y_index.empty() ? b : plan.y_index[b];
        statuses[b] =
            BFloat16Gemm(context, d, x_data + xb * d.m * d.k, lda, y_data + yb * d.k * d.n, ldb,
                         out + b * d.m * d.n, d.n, split_each);
      }
    };
    if (split_each || threads <= 1 || plan.count == 1) {
      run(0, plan.count);
    } else {
      ParallelFor(context, plan.count, static_cast<double>(work) / 4 + 1000, run);
    }
    for (Status& status : statuses) WEFT_RETURN_IF_ERROR(status);
    return Status::OK();
  }

  static void MultiplyOne(const GemmDims& d, const T* a, int64_t lda, const T* b, int64_t ldb,
                          T* c) {
    if constexpr (kIsBlasType<T>) {
      Gemm(d, T(1), a, lda, b, ldb, T(0), c, d.n);
    } else {
      Eigen::Map<const RowMajorMatrix<T>> am(a, d.transpose_a ? d.k : d.m, lda);
      Eigen::Map<const RowMajorMatrix<T>> bm(b, d.transpose_b ? d.n : d.k, ldb);
      Eigen::Map<RowMajorMatrix<T>> cm(c, d.m, d.n);
      if (d.transpose_a && d.transpose_b) {
        cm.noalias() = am.transpose() * bm.transpose();
      } else if (d.transpose_a) {
        cm.noalias() = am.transpose() * bm;
      } else if (d.transpose_b) {
        cm.noalias() = am * bm.transpose();
      } else {
        cm.noalias() = am * bm;
      }
    }
  }

  bool adj_x_ = false;
  bool adj_y_ = false;
};

}  // namespace

void RegisterBatchMatMulKernels(KernelRegistry& registry) {
  registry.Register<BatchMatMulOp<float>>(
      KernelDef("BatchMatMulV2", "CPU").TypeConstraint<float>("T"));
  registry.Register<BatchMatMulOp<double>>(
      KernelDef("BatchMatMulV2", "CPU").TypeConstraint<double>("T"));
  registry.Register<BatchMatMulOp<int32_t>>(
      KernelDef("BatchMatMulV2", "CPU").TypeConstraint<int32_t>("T"));
  registry.Register<BatchMatMulOp<int64_t>>(
      KernelDef("BatchMatMulV2", "CPU").TypeConstraint<int64_t>("T"));
  registry.Register<BatchMatMulOp<bfloat16>>(
      KernelDef("BatchMatMulV2", "CPU").TypeConstraint<bfloat16>("T"));
}

}  // namespace weft::kernels
