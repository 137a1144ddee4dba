// Tensor comparisons for tests: ExpectTensorEqual (same dtype, shape and bits) and ExpectTensorNear
// (floating point within an absolute + relative tolerance), reporting the first differing index.
#pragma once

#include <cmath>

#include <gtest/gtest.h>

#include "weft/core/tensor.h"

namespace weft::testing {

inline ::testing::AssertionResult TensorsHaveSameLayout(const Tensor& actual,
                                                        const Tensor& expected) {
  if (actual.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure()
           << "dtype " << DataTypeName(actual.dtype()) << " vs " << DataTypeName(expected.dtype());
  }
  if (!(actual.shape() == expected.shape())) {
    return ::testing::AssertionFailure()
           << "shape " << actual.shape() << " vs " << expected.shape();
  }
  return ::testing::AssertionSuccess();
}

// Bitwise-equal elements (NaNs compare by representation).
::testing::AssertionResult TensorEqual(const Tensor& actual, const Tensor& expected);
// |a - e| <= atol + rtol * |e| for every element; floating dtypes only.
::testing::AssertionResult TensorNear(const Tensor& actual, const Tensor& expected,
                                      double atol = 1e-5, double rtol = 1e-5);

}  // namespace weft::testing

#define EXPECT_TENSOR_EQ(actual, expected) \
  EXPECT_TRUE(::weft::testing::TensorEqual((actual), (expected)))
#define EXPECT_TENSOR_NEAR(actual, expected, ...) \
  EXPECT_TRUE(::weft::testing::TensorNear((actual), (expected), ##__VA_ARGS__))
