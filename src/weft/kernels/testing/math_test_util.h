// Test-only helpers for the math kernel tests: random tensors, a naive NumPy-broadcasting
// reference loop, running a kernel without its shape function (to reach the kernel's own error
// paths), and running a shape function on partly known shapes.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/tensor.h"
#include "weft/framework/node_def_util.h"
#include "weft/framework/shape_inference.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/testing/kernel_runner.h"

namespace weft::kernels::testing {

// Values uniform in [lo, hi] (integers: whole numbers; bool: fair coin).
template <typename T>
Tensor RandomTensor(const TensorShape& shape, uint32_t seed, double lo = -10, double hi = 10) {
  std::mt19937 gen(seed);
  Tensor t(DataTypeToEnum<T>::value, shape);
  T* data = t.data<T>();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      data[i] = (gen() & 1) != 0;
    } else if constexpr (std::is_integral_v<T>) {
      std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo),
                                                  static_cast<int64_t>(hi));
      data[i] = static_cast<T>(dist(gen));
    } else {
      std::uniform_real_distribution<double> dist(lo, hi);
      data[i] = static_cast<T>(dist(gen));
    }
  }
  return t;
}

// Row-major multi-index of flat index `i` in `dims`.
inline std::vector<int64_t> Unravel(int64_t i, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    index[d] = dims[d] == 0 ? 0 : i % dims[d];
    i = dims[d] == 0 ? 0 : i / dims[d];
  }
  return index;
}

// Flat index in `dims` (right-aligned to `out_index`, broadcast dims read index 0).
inline int64_t BroadcastFlatIndex(const std::vector<int64_t>& out_index,
                                  const std::vector<int64_t>& dims) {
  const size_t pad = out_index.size() - dims.size();
  int64_t flat = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    flat = flat * dims[d] + (dims[d] == 1 ? 0 : out_index[d + pad]);
  }
  return flat;
}

// z[i] = fn(x[..], y[..]) over the NumPy broadcast of x and y (assumed compatible).
template <typename T, typename Out, typename Fn>
Tensor ReferenceBinary(const Tensor& x, const Tensor& y, Fn fn) {
  const auto& xd = x.shape().dim_sizes();
  const auto& yd = y.shape().dim_sizes();
  const size_t rank = std::max(xd.size(), yd.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i < rank - xd.size() ? 1 : xd[i - (rank - xd.size())];
    const int64_t b = i < rank - yd.size() ? 1 : yd[i - (rank - yd.size())];
    out[i] = a == 1 ? b : a;
  }
  Tensor z(DataTypeToEnum<Out>::value, TensorShape(out));
  for (int64_t i = 0; i < z.NumElements(); ++i) {
    const std::vector<int64_t> index = Unravel(i, out);
    z.data<Out>()[i] =
        fn(x.data<T>()[BroadcastFlatIndex(index, xd)], y.data<T>()[BroadcastFlatIndex(index, yd)]);
  }
  return z;
}

// Runs `op`'s CPU kernel on `inputs` without running its shape function first (node "k").
inline StatusOr<std::vector<Tensor>> RunKernelOnly(
    const std::string& op_name, std::vector<Tensor> inputs,
    const std::map<std::string, proto::AttrValue>& attrs) {
  static weft::testing::KernelRunner* runner = new weft::testing::KernelRunner(1);
  return runner->RunKernelOnly(op_name, std::move(inputs), attrs, "k");
}

// Runs `op`'s shape function on `shapes` (with `values[i]` the constant value of input i, or
// nullptr); attrs get their defaults. Returns the output shapes (node "s").
inline StatusOr<std::vector<PartialShape>> InferShapes(
    const std::string& op_name, const std::vector<PartialShape>& shapes,
    const std::vector<const Tensor*>& values,
    const std::map<std::string, proto::AttrValue>& attrs) {
  return weft::testing::InferShapes(op_name, shapes, values, attrs, "s");
}

}  // namespace weft::kernels::testing
