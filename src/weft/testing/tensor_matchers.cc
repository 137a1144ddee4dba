#include "weft/testing/tensor_matchers.h"

#include <cstring>

namespace weft::testing {

::testing::AssertionResult TensorEqual(const Tensor& actual, const Tensor& expected) {
  ::testing::AssertionResult layout = TensorsHaveSameLayout(actual, expected);
  if (!layout) return layout;
  size_t element = DataTypeSize(actual.dtype());
  const char* a = static_cast<const char*>(actual.raw_data());
  const char* e = static_cast<const char*>(expected.raw_data());
  for (int64_t i = 0; i < actual.NumElements(); ++i) {
    if (std::memcmp(a + i * element, e + i * element, element) != 0) {
      return ::testing::AssertionFailure()
             << "element " << i << " differs: " << actual.DebugString(32) << " vs "
             << expected.DebugString(32);
    }
  }
  return ::testing::AssertionSuccess();
}

namespace {

template <typename T>
::testing::AssertionResult Near(const Tensor& actual, const Tensor& expected, double atol,
                                double rtol) {
  const T* a = actual.data<T>();
  const T* e = expected.data<T>();
  for (int64_t i = 0; i < actual.NumElements(); ++i) {
    double diff = std::fabs(static_cast<double>(a[i]) - static_cast<double>(e[i]));
    bool both_nan = std::isnan(static_cast<double>(a[i])) && std::isnan(static_cast<double>(e[i]));
    if (!both_nan && !(diff <= atol + rtol * std::fabs(static_cast<double>(e[i])))) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << static_cast<double>(a[i]) << " vs "
             << static_cast<double>(e[i]) << " (diff " << diff << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

::testing::AssertionResult TensorNear(const Tensor& actual, const Tensor& expected, double atol,
                                      double rtol) {
  ::testing::AssertionResult layout = TensorsHaveSameLayout(actual, expected);
  if (!layout) return layout;
  if (actual.dtype() == DataType::kFloat) return Near<float>(actual, expected, atol, rtol);
  if (actual.dtype() == DataType::kDouble) return Near<double>(actual, expected, atol, rtol);
  if (actual.dtype() == DataType::kBFloat16) return Near<bfloat16>(actual, expected, atol, rtol);
  return TensorEqual(actual, expected);
}

}  // namespace weft::testing
