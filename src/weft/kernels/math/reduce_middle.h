// ReduceMiddle: out[a, b] = reduce over r of in[a, r, b] for a contiguous [A, R, B] buffer, the
// building block of the reduction kernels. B == 1 (reduce the innermost dims) uses Eigen's inner
// reductions; B > 1 (reduce outer dims) adds whole rows of B elements with vectorised
// elementwise ops instead of striding down columns, sharding over column blocks or, when there
// are few of those, over slices of rows whose partial results are then combined.
//
// A Policy names the reduction: SumPolicy<T> and MaxPolicy<T> (which propagates NaN).
#pragma once

#include <algorithm>
#include <limits>
#include <memory>
#include <type_traits>

#include "weft/kernels/math/device_eval.h"

namespace weft::kernels {

template <typename T>
struct SumPolicy {
  using EigenReducer = Eigen::internal::SumReducer<T>;
  template <typename X, typename Y>
  static auto Combine(const X& x, const Y& y) {
    return x + y;
  }
};

template <typename T>
struct MaxPolicy {
  static constexpr bool kHasNan = std::numeric_limits<T>::has_quiet_NaN;
  using EigenReducer =
      std::conditional_t<kHasNan, Eigen::internal::MaxReducer<T, Eigen::PropagateNaN>,
                         Eigen::internal::MaxReducer<T>>;
  template <typename X, typename Y>
  static auto Combine(const X& x, const Y& y) {
    if constexpr (kHasNan) {
      return x.template cwiseMax<Eigen::PropagateNaN>(y);
    } else {
      return x.cwiseMax(y);
    }
  }
};

namespace internal {

// Rows narrower than this are reduced several at a time (see ReduceRows).
inline constexpr int64_t kMinRowStep = 64;
// Columns per shard when sharding an outer reduction over column blocks.
inline constexpr int64_t kColumnBlock = 512;

// out[0, width) = combine over i < rows (rows >= 1) of in[i * stride, i * stride + width), on the
// calling thread. Narrow contiguous rows are taken `group` at a time as one wide row, and the
// `group` partial rows folded at the end.
template <typename T, typename Policy>
void ReduceRows(const T* in, int64_t rows, int64_t width, int64_t stride, T* out) {
  using Row = ConstUnalignedEigenTensorMap<T>;
  UnalignedEigenTensorMap<T> o(out, width);
  const int64_t group = width >= kMinRowStep ? 1 : (kMinRowStep + width - 1) / width;
  if (stride == width && group > 1 && rows >= 2 * group) {
    const int64_t step = group * width, steps = rows / group;
    std::unique_ptr<T[]> acc_data(new T[step]);
    UnalignedEigenTensorMap<T> acc(acc_data.get(), step);
    acc = Row(in, step);
    for (int64_t s = 1; s < steps; ++s) acc = Policy::Combine(acc, Row(in + s * step, step));
    o = Row(acc_data.get(), width);
    for (int64_t g = 1; g < group; ++g) {
      o = Policy::Combine(o, Row(acc_data.get() + g * width, width));
    }
    for (int64_t i = steps * group; i < rows; ++i) {
      o = Policy::Combine(o, Row(in + i * width, width));
    }
    return;
  }
  o = Row(in, width);
  for (int64_t i = 1; i < rows; ++i) o = Policy::Combine(o, Row(in + i * stride, width));
}

// out[b] = reduce over r of in[r, b], sharded over slices of rows, for few and tall columns.
template <typename T, typename Policy>
void ReduceTallColumns(OpKernelContext* context, const T* in, int64_t r, int64_t b, T* out) {
  const int64_t max_slices = 4 * static_cast<int64_t>(context->device()->intra_op_threads());
  const int64_t rows_per_slice = (r + max_slices - 1) / max_slices;
  const int64_t slices = (r + rows_per_slice - 1) / rows_per_slice;
  std::unique_ptr<T[]> partial(new T[slices * b]);
  ParallelFor(context, slices, static_cast<double>(rows_per_slice * b),
              [&](int64_t begin, int64_t end) {
                for (int64_t s = begin; s < end; ++s) {
                  const int64_t r0 = s * rows_per_slice;
                  ReduceRows<T, Policy>(in + r0 * b, std::min(rows_per_slice, r - r0), b, b,
                                        partial.get() + s * b);
                }
              });
  ReduceRows<T, Policy>(partial.get(), slices, b, b, out);
}

}  // namespace internal

template <typename T, typename Policy>
void ReduceMiddle(OpKernelContext* context, const T* in, int64_t a, int64_t r, int64_t b, T* out) {
  const int64_t total = a * r * b;
  if (b == 1) {
    using Dims1 = Eigen::array<Eigen::Index, 1>;
    const typename Policy::EigenReducer reducer;
    EvaluateOnDevice(context, total, [&](const auto& d) {
      if (a == 1) {
        ConstUnalignedEigenTensorMap<T, 1> x(in, r);
        UnalignedEigenTensorMap<T, 0> o(out);
        o.device(d) = x.reduce(Dims1{0}, reducer);
      } else {
        ConstUnalignedEigenTensorMap<T, 2> x(in, a, r);
        UnalignedEigenTensorMap<T, 1> o(out, a);
        o.device(d) = x.reduce(Dims1{1}, reducer);
      }
    });
    return;
  }
  if (total < kMinParallelElements) {
    for (int64_t i = 0; i < a; ++i) {
      internal::ReduceRows<T, Policy>(in + i * r * b, r, b, b, out + i * b);
    }
    return;
  }
  const int64_t blocks = (b + internal::kColumnBlock - 1) / internal::kColumnBlock;
  if (a * blocks >= 2 * static_cast<int64_t>(context->device()->intra_op_threads())) {
    const int64_t width = std::min(b, internal::kColumnBlock);
    ParallelFor(context, a * blocks, static_cast<double>(r * width),
                [&](int64_t begin, int64_t end) {
                  for (int64_t u = begin; u < end; ++u) {
                    const int64_t i = u / blocks, b0 = (u % blocks) * internal::kColumnBlock;
                    internal::ReduceRows<T, Policy>(in + i * r * b + b0, r,
                                                    std::min(internal::kColumnBlock, b - b0), b,
                                                    out + i * b + b0);
                  }
                });
    return;
  }
  for (int64_t i = 0; i < a; ++i) {
    internal::ReduceTallColumns<T, Policy>(context, in + i * r * b, r, b, out + i * b);
  }
}

}  // namespace weft::kernels
