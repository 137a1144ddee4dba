// Tile and BroadcastTo kernels. BroadcastTo is a tile too: each input dimension of size 1 is
// repeated to the target size. Dimensions are merged where the tiling allows (e.g. an untiled run
// of dimensions becomes one), then the output is written recursively: the first copy of each block
// is built from the input, and its repetitions are doubled out of it with block copies. Large
// outputs are written by the intra-op threads, one outermost output slab per task.
#include <algorithm>
#include <functional>

#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/array/array_util.h"
#include "weft/kernels/eigen_support.h"

namespace weft::kernels::array {
namespace {

// Output dimension i is in[i] * multiples[i]: multiples[i] copies of the input along i.
struct TilePlan {
  std::vector<int64_t> in;
  std::vector<int64_t> multiples;
};

// Drops dimensions that neither exist nor repeat, and merges neighbours that tile as one.
TilePlan Simplify(const std::vector<int64_t>& in, const std::vector<int64_t>& multiples) {
  TilePlan plan;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t n = in[i], m = multiples[i];
    if (n == 1 && m == 1) continue;
    if (!plan.in.empty()) {
      int64_t& last_n = plan.in.back();
      int64_t& last_m = plan.multiples.back();
      if (last_m == 1 && m == 1) {  // two untiled dims: one longer untiled dim
        last_n *= n;
        continue;
      }
      if (last_n == 1 && n == 1) {  // two repeats of the same block: one longer repeat
        last_m *= m;
        continue;
      }
      if (last_n == 1 && m == 1) {  // [1 tiled m] then [n untiled]: a block of n repeated m times
        last_n = n;
        continue;
      }
    }
    plan.in.push_back(n);
    plan.multiples.push_back(m);
  }
  if (plan.in.empty()) {
    plan.in.push_back(1);
    plan.multiples.push_back(1);
  }
  return plan;
}

// Writes a tiled output, moving elements of type U (chosen by element size).
template <typename U>
class Tiler {
 public:
  explicit Tiler(const TilePlan& plan) : in_(plan.in), multiples_(plan.multiples) {
    const int rank = static_cast<int>(in_.size());
    in_strides_.assign(rank, 1);
    out_strides_.assign(rank, 1);
    for (int i = rank - 2; i >= 0; --i) {
      in_strides_[i] = in_strides_[i + 1] * in_[i + 1];
      out_strides_[i] = out_strides_[i + 1] * in_[i + 1] * multiples_[i + 1];
    }
  }

  void Run(OpKernelContext* context, const U* src, U* dst) const {
    const int64_t n = in_[0];
    const int64_t units = n * multiples_[0];  // rank 1: elements; else slabs of dimension 0
    std::function<void(int64_t, int64_t)> work;
    if (in_.size() == 1) {
      work = [&](int64_t begin, int64_t end) {
        if (n == 1) return std::fill(dst + begin, dst + end, *src);
        for (int64_t p = begin; p < end;) {
          const int64_t j = p % n, count = std::min(n - j, end - p);
          std::copy_n(src + j, count, dst + p);
          p += count;
        }
      };
    } else {
      work = [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
          Fill(1, src + (k % n) * in_strides_[0], dst + k * out_strides_[0]);
        }
      };
    }
    const int64_t total = units * out_strides_[0];
    if (total >= kMinParallelElements) {
      ParallelFor(context, units, static_cast<double>(out_strides_[0]) * sizeof(U) / 4, work);
    } else {
      work(0, units);
    }
  }

 private:
  // Writes the output block of dimensions [d, rank) from the input block of the same dims.
  void Fill(int d, const U* src, U* dst) const {
    const int64_t n = in_[d], m = multiples_[d];
    if (d + 1 == static_cast<int>(in_.size())) {
      if (n == 1) {
        std::fill_n(dst, m, *src);
        return;
      }
      std::copy_n(src, n, dst);
    } else {
      for (int64_t j = 0; j < n; ++j)
        Fill(d + 1, src + j * in_strides_[d], dst + j * out_strides_[d]);
    }
    Repeat(dst, n * out_strides_[d], m);
  }

  // block[0, length) is written; makes block[length * i, length * (i + 1)) copies of it.
  static void Repeat(U* block, int64_t length, int64_t times) {
    const int64_t total = length * times;
    for (int64_t filled = length; filled < total;) {
      const int64_t count = std::min(filled, total - filled);
      std::copy_n(block, count, block + filled);
      filled += count;
    }
  }

  std::vector<int64_t> in_, multiples_, in_strides_, out_strides_;
};

// Tiles `input`, viewed with dims `in` (same element count), by `multiples` into `out`.
void Tile(OpKernelContext* context, const Tensor& input, const std::vector<int64_t>& in,
          const std::vector<int64_t>& multiples, Tensor* out) {
  TilePlan plan = Simplify(in, multiples);
  VisitByElementSize(input.dtype(), [&]<typename U>() {
    Tiler<U>(plan).Run(context, ElementsAs<U>(input), ElementsAs<U>(*out));
  });
}

// input: any shape of rank r; multiples: [r] int32/int64, each >= 0.
class TileOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    std::vector<int64_t> multiples;
    WEFT_RETURN_IF_ERROR(ReadIndices(*this, context->input(1), "multiples", &multiples));
    const int rank = input.dims();
    if (static_cast<int>(multiples.size()) != rank) {
      return NodeError(*this, "multiples [", StrJoin(multiples, ","), "] must have one entry per ",
                       "dimension of shape ", input.shape());
    }
    std::vector<int64_t> out_dims(rank);
    bool repeats = false;
    for (int i = 0; i < rank; ++i) {
      if (multiples[i] < 0) {
        return NodeError(*this, "multiples [", StrJoin(multiples, ","), "] has a negative entry");
      }
      repeats |= multiples[i] != 1;
      if (__builtin_mul_overflow(input.dim_size(i), multiples[i], &out_dims[i])) {
        return NodeError(*this, "tiling shape ", input.shape(), " by [", StrJoin(multiples, ","),
                         "] overflows");
      }
    }
    StatusOr<TensorShape> out_shape = TensorShape::Create(out_dims);
    if (!out_shape.ok()) {
      return NodeError(*this, "tiling shape ", input.shape(), " by [", StrJoin(multiples, ","),
                       "] overflows");
    }
    if (!repeats) return context->SetOutput(0, input);
    Tensor* out;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, *out_shape, &out));
    if (out->NumElements() > 0) Tile(context, input, input.shape().dim_sizes(), multiples, out);
    return Status::OK();
  }
};

// input: rank r; shape: [R] int32/int64 with R >= r; NumPy broadcasting from the right.
class BroadcastToOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    std::vector<int64_t> target;
    WEFT_RETURN_IF_ERROR(ReadIndices(*this, context->input(1), "shape", &target));
    StatusOr<TensorShape> out_shape = TensorShape::Create(target);
    if (!out_shape.ok()) {
      return NodeError(*this, "bad shape [", StrJoin(target, ","),
                       "]: ", out_shape.status().message());
    }
    const int rank = static_cast<int>(target.size());
    const int offset = rank - input.dims();
    if (offset < 0) {
      return NodeError(*this, "cannot broadcast shape ", input.shape(), " to ", *out_shape);
    }
    std::vector<int64_t> in(rank, 1), multiples(rank, 1);
    bool repeats = false;
    for (int i = 0; i < rank; ++i) {
      if (i >= offset) in[i] = input.dim_size(i - offset);
      if (in[i] == target[i]) continue;
      if (in[i] != 1) {
        return NodeError(*this, "cannot broadcast shape ", input.shape(), " to ", *out_shape);
      }
      multiples[i] = target[i];
      repeats = true;
    }
    if (!repeats) return context->SetOutput(0, input.Reshaped(*out_shape));
    Tensor* out;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, *out_shape, &out));
    if (out->NumElements() > 0) Tile(context, input, in, multiples, out);
    return Status::OK();
  }
};

}  // namespace

void RegisterTileKernels(KernelRegistry& registry) {
  registry.Register<TileOp>(KernelDef("Tile", "CPU").TypeConstraint("T", ArrayDataTypes()));
  registry.Register<BroadcastToOp>(
      KernelDef("BroadcastTo", "CPU").TypeConstraint("T", ArrayDataTypes()));
}

}  // namespace weft::kernels::array
