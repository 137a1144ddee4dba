// Test-only helpers for the nn kernel tests: seeded random tensors, attr maps for windowed ops,
// running a shape function on partial shapes, and central-difference gradients of a scalar
// function of one float64 tensor.
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <cblas.h>
#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/framework/node_def_util.h"
#include "weft/framework/shape_inference.h"
#include "weft/kernels/nn/conv_algorithm.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/cpu_device.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/scoped_blas_threads.h"
#include "weft/testing/tensor_matchers.h"

namespace weft {
// Lets GoogleTest print partial shapes in failure messages.
inline void PrintTo(const PartialShape& shape, std::ostream* out) { *out << shape.DebugString(); }
}  // namespace weft

namespace weft::kernels::testing {

using AttrMap = std::map<std::string, proto::AttrValue>;

// Uniform values in [lo, hi), reproducible from `seed`.
template <typename T>
Tensor RandomTensor(const TensorShape& shape, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(DataTypeToEnum<T>::value, shape);
  for (T& v : t.flat<T>()) v = static_cast<T>(dist(rng));
  return t;
}

// Whole numbers in [lo, hi] as T, reproducible from `seed`: sums of them are exact in float.
template <typename T>
Tensor RandomIntegers(const TensorShape& shape, uint32_t seed, int64_t lo, int64_t hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  Tensor t(DataTypeToEnum<T>::value, shape);
  for (T& v : t.flat<T>()) v = static_cast<T>(dist(rng));
  return t;
}

inline Tensor Sizes(const TensorShape& shape) {
  std::vector<int32_t> dims(shape.dim_sizes().begin(), shape.dim_sizes().end());
  return Tensor::FromVector<int32_t>(dims);
}

inline AttrMap ConvAttrs(int64_t stride_rows, int64_t stride_cols, const std::string& padding) {
  return {{"strides", MakeAttrValue(std::vector<int64_t>{1, stride_rows, stride_cols, 1})},
          {"padding", MakeAttrValue(padding)}};
}

inline AttrMap PoolAttrs(int64_t window_rows, int64_t window_cols, int64_t stride_rows,
                         int64_t stride_cols, const std::string& padding) {
  return {{"ksize", MakeAttrValue(std::vector<int64_t>{1, window_rows, window_cols, 1})},
          {"strides", MakeAttrValue(std::vector<int64_t>{1, stride_rows, stride_cols, 1})},
          {"padding", MakeAttrValue(padding)}};
}

// Runs `op_name`'s shape function on partial input shapes (and known input values, if any).
inline StatusOr<std::vector<PartialShape>> InferShapes(const std::string& op_name,
                                                       std::vector<PartialShape> inputs,
                                                       const AttrMap& attrs,
                                                       std::vector<const Tensor*> values = {}) {
  return weft::testing::InferShapes(op_name, std::move(inputs), std::move(values), attrs,
                                    "shape_test");
}

// d f / d x by central differences with step `h`, for f of a float64 tensor.
inline Tensor NumericGradient(const std::function<double(const Tensor&)>& f, const Tensor& x,
                              double h = 1e-5) {
  Tensor grad(DataType::kDouble, x.shape());
  Tensor probe = x.DeepCopy();
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const double saved = probe.data<double>()[i];
    probe.data<double>()[i] = saved + h;
    const double up = f(probe);
    probe.data<double>()[i] = saved - h;
    const double down = f(probe);
    probe.data<double>()[i] = saved;
    grad.data<double>()[i] = (up - down) / (2 * h);
  }
  return grad;
}

// sum(a * w) for float64 tensors of equal size: turns a tensor output into a scalar to
// differentiate, whose gradient with respect to a is w.
inline double WeightedSum(const Tensor& a, const Tensor& w) {
  double sum = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) sum += a.data<double>()[i] * w.data<double>()[i];
  return sum;
}

// The arguments as a vector of inputs that nothing else holds once the caller's temporaries are
// gone (an initializer list would keep a second reference), so kernels may reuse their buffers.
template <typename... Tensors>
std::vector<Tensor> OwnedInputs(Tensors... tensors) {
  std::vector<Tensor> inputs;
  (inputs.push_back(std::move(tensors)), ...);
  return inputs;
}

// A float32 copy of a float64 tensor.
inline Tensor ToFloat(const Tensor& t) {
  Tensor out(DataType::kFloat, t.shape());
  const double* in = t.data<double>();
  float* dst = out.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) dst[i] = static_cast<float>(in[i]);
  return out;
}

// Forces float convolutions onto one algorithm while in scope, so tests check both.
class ScopedConvAlgorithm {
 public:
  explicit ScopedConvAlgorithm(kernels::ConvAlgorithm algorithm) {
    kernels::SetConvAlgorithmOverride(algorithm);
  }
  ~ScopedConvAlgorithm() { kernels::SetConvAlgorithmOverride(std::nullopt); }
  ScopedConvAlgorithm(const ScopedConvAlgorithm&) = delete;
  ScopedConvAlgorithm& operator=(const ScopedConvAlgorithm&) = delete;
};

inline constexpr kernels::ConvAlgorithm kConvAlgorithms[] = {kernels::ConvAlgorithm::kIm2ColGemm,
                                                             kernels::ConvAlgorithm::kOneDnn};

// Runs `check` under both convolution algorithms, each with OpenBLAS single-threaded (chunks as
// concurrent tasks) and multi-threaded (chunks one at a time).
template <typename Check>
void ForEachConvAlgorithmAndBlasThreads(Check&& check) {
  for (kernels::ConvAlgorithm algorithm : kConvAlgorithms) {
    ScopedConvAlgorithm forced(algorithm);
    for (int blas_threads : {1, 2}) {
      SCOPED_TRACE(
          StrCat(kernels::ConvAlgorithmName(algorithm), ", OpenBLAS threads ", blas_threads));
      weft::testing::ScopedBlasThreads blas(blas_threads);
      check();
    }
  }
}

// Runs `op_name`'s kernel without its shape function, so tests reach the checks a kernel makes
// itself. The node is named like KernelRunner's, "test_<op>".
inline StatusOr<std::vector<Tensor>> RunKernelOnly(const std::string& op_name,
                                                   std::vector<Tensor> inputs,
                                                   const AttrMap& attrs) {
  static weft::testing::KernelRunner* runner = new weft::testing::KernelRunner(2);
  return runner->RunKernelOnly(op_name, std::move(inputs), attrs);
}

// Expects `status` to be an InvalidArgument naming the KernelRunner's node for `op` and holding
// `fragment`.
inline void ExpectKernelError(const Status& status, const std::string& op,
                              const std::string& fragment) {
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("node 'test_" + op + "' (" + op + ")"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find(fragment), std::string::npos) << status;
}

}  // namespace weft::kernels::testing
