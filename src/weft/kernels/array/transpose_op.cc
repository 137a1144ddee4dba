// Transpose kernel: y.shape[i] = x.shape[perm[i]]. Dimensions of size 1 are dropped and input
// dimensions that stay adjacent under perm are merged first, so many transposes reduce to a view
// of the input (no copy) or to a (batched) 2-D transpose, done in cache-sized tiles. Other
// permutations of up to 6 merged dimensions use an Eigen shuffle; more use a plain strided loop.
// The kernel moves elements by size, so one instantiation serves every dtype of that width.
#include <algorithm>
#include <numeric>

#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/array/array_util.h"
#include "weft/kernels/eigen_support.h"

namespace weft::kernels::array {
namespace {

// A transpose after merging: `dims` are the (merged) input dimensions, `perm` permutes them.
struct Layout {
  std::vector<int64_t> dims;
  std::vector<int> perm;
};

Layout Simplify(const TensorShape& shape, const std::vector<int>& perm) {
  const int rank = shape.dims();
  std::vector<int> kept(rank, -1);  // index among the dimensions of size != 1
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    if (shape.dim_size(i) == 1) continue;
    kept[i] = static_cast<int>(dims.size());
    dims.push_back(shape.dim_size(i));
  }
  // Runs of consecutive input dimensions, in output order: (first dimension, count).
  std::vector<std::pair<int, int>> runs;
  for (int p : perm) {
    if (kept[p] < 0) continue;
    if (!runs.empty() && runs.back().first + runs.back().second == kept[p]) {
      ++runs.back().second;
    } else {
      runs.emplace_back(kept[p], 1);
    }
  }
  // Number the runs by their position in the input.
  std::vector<int> by_input(runs.size());
  std::iota(by_input.begin(), by_input.end(), 0);
  std::sort(by_input.begin(), by_input.end(),
            [&](int a, int b) { return runs[a].first < runs[b].first; });
  Layout layout;
  layout.dims.resize(runs.size());
  layout.perm.resize(runs.size());
  for (size_t k = 0; k < by_input.size(); ++k) {
    const auto& [first, count] = runs[by_input[k]];
    layout.dims[k] = 1;
    for (int d = first; d < first + count; ++d) layout.dims[k] *= dims[d];
    layout.perm[by_input[k]] = static_cast<int>(k);
  }
  return layout;
}

// dst[j][i] = src[i][j] for rows i in [row_begin, row_end) of a [rows, cols] matrix, in square
// tiles of one cache line of elements per side. Full tiles have compile-time bounds, which lets
// the compiler unroll and vectorise them.
template <typename U>
void TransposeTiles(const U* src, U* dst, int64_t rows, int64_t cols, int64_t row_begin,
                    int64_t row_end) {
  constexpr int64_t kTile = std::max<int64_t>(8, 64 / sizeof(U));
  for (int64_t i0 = row_begin; i0 < row_end; i0 += kTile) {
    const int64_t i1 = std::min(i0 + kTile, row_end);
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t j1 = std::min(j0 + kTile, cols);
      if (i1 - i0 == kTile && j1 - j0 == kTile) {
        for (int64_t j = 0; j < kTile; ++j) {
          for (int64_t i = 0; i < kTile; ++i) {
            dst[(j0 + j) * rows + i0 + i] = src[(i0 + i) * cols + j0 + j];
          }
        }
        continue;
      }
      for (int64_t j = j0; j < j1; ++j) {
        for (int64_t i = i0; i < i1; ++i) dst[j * rows + i] = src[i * cols + j];
      }
    }
  }
}

// Transposes `batch` row-major [rows, cols] matrices, in bands of rows spread over the threads.
template <typename U>
void BatchedTranspose(OpKernelContext* context, const U* src, U* dst, int64_t batch, int64_t rows,
                      int64_t cols) {
  constexpr int64_t kBand = 64;  // a multiple of every tile size
  const int64_t bands = (rows + kBand - 1) / kBand;
  auto work = [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t b = unit / bands, band = unit % bands;
      TransposeTiles(src + b * rows * cols, dst + b * rows * cols, rows, cols, band * kBand,
                     std::min(rows, (band + 1) * kBand));
    }
  };
  if (batch * rows * cols >= kMinParallelElements) {
    ParallelFor(context, batch * bands, 2.0 * kBand * static_cast<double>(cols), work);
  } else {
    work(0, batch * bands);
  }
}

template <typename U, int R>
void ShuffleTranspose(OpKernelContext* context, const U* src, U* dst, const Layout& layout) {
  std::array<Eigen::DenseIndex, R> in_dims, out_dims;
  std::array<int, R> shuffle;
  for (int i = 0; i < R; ++i) {
    in_dims[i] = layout.dims[i];
    out_dims[i] = layout.dims[layout.perm[i]];
    shuffle[i] = layout.perm[i];
  }
  ConstUnalignedEigenTensorMap<U, R> x(src, in_dims);
  UnalignedEigenTensorMap<U, R> y(dst, out_dims);
  if (y.size() >= kMinParallelElements) {
    y.device(EigenDevice(context)) = x.shuffle(shuffle);
  } else {
    Eigen::DefaultDevice device;
    y.device(device) = x.shuffle(shuffle);
  }
}

// Any rank: walks the output in order, stepping through the input by its strides.
template <typename U>
void StridedTranspose(const U* src, U* dst, const Layout& layout) {
  const int rank = static_cast<int>(layout.dims.size());
  std::vector<int64_t> in_strides(rank, 1), out_dims(rank), steps(rank);
  for (int i = rank - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * layout.dims[i + 1];
  for (int i = 0; i < rank; ++i) {
    out_dims[i] = layout.dims[layout.perm[i]];
    steps[i] = in_strides[layout.perm[i]];
  }
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  const int64_t inner = out_dims[rank - 1], inner_step = steps[rank - 1];
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  for (int64_t done = 0; done < total; done += inner) {
    for (int64_t j = 0; j < inner; ++j) *dst++ = src[offset + j * inner_step];
    for (int i = rank - 2; i >= 0; --i) {  // advance the odometer over the outer dimensions
      offset += steps[i];
      if (++index[i] < out_dims[i]) break;
      offset -= steps[i] * out_dims[i];
      index[i] = 0;
    }
  }
}

template <typename U>
void TransposeElements(OpKernelContext* context, const U* src, U* dst, const Layout& layout) {
  const std::vector<int>& perm = layout.perm;
  const std::vector<int64_t>& dims = layout.dims;
  switch (perm.size()) {
    case 2:
      return BatchedTranspose(context, src, dst, 1, dims[0], dims[1]);
    case 3:
      if (perm[0] == 0) return BatchedTranspose(context, src, dst, dims[0], dims[1], dims[2]);
      return ShuffleTranspose<U, 3>(context, src, dst, layout);
    case 4:
      return ShuffleTranspose<U, 4>(context, src, dst, layout);
    case 5:
      return ShuffleTranspose<U, 5>(context, src, dst, layout);
    case 6:
      return ShuffleTranspose<U, 6>(context, src, dst, layout);
    default:
      return StridedTranspose(src, dst, layout);
  }
}

// x: any shape; perm: [rank] int32/int64, a permutation of 0..rank-1.
class TransposeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    std::vector<int64_t> perm_values;
    WEFT_RETURN_IF_ERROR(ReadIndices(*this, context->input(1), "perm", &perm_values));
    const int rank = input.dims();
    if (static_cast<int>(perm_values.size()) != rank) {
      return NodeError(*this, "perm [", StrJoin(perm_values, ","), "] has ", perm_values.size(),
                       " entries, but the input has shape ", input.shape());
    }
    std::vector<int> perm(rank);
    std::vector<bool> seen(rank, false);
    std::vector<int64_t> out_dims(rank);
    for (int i = 0; i < rank; ++i) {
      int64_t p = perm_values[i];
      if (p < 0 || p >= rank || seen[p]) {
        return NodeError(*this, "perm [", StrJoin(perm_values, ","),
                         "] is not a permutation of 0..", rank - 1);
      }
      seen[p] = true;
      perm[i] = static_cast<int>(p);
      out_dims[i] = input.dim_size(perm[i]);
    }
    TensorShape out_shape(std::move(out_dims));
    Layout layout = Simplify(input.shape(), perm);
    // Zero or one merged dimension: the elements keep their order.
    if (layout.perm.size() <= 1) return context->SetOutput(0, input.Reshaped(out_shape));
    Tensor* out;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, out_shape, &out));
    if (out->NumElements() == 0) return Status::OK();
    VisitByElementSize(input.dtype(), [&]<typename U>() {
      TransposeElements<U>(context, ElementsAs<U>(input), ElementsAs<U>(*out), layout);
    });
    return Status::OK();
  }
};

}  // namespace

void RegisterTransposeKernels(KernelRegistry& registry) {
  registry.Register<TransposeOp>(
      KernelDef("Transpose", "CPU").TypeConstraint("T", ArrayDataTypes()));
}

}  // namespace weft::kernels::array
