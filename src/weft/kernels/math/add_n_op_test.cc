// Tests for the AddN kernel: hand values, N from 1 to 9 against a reference loop (every pass
// pattern), empty inputs, buffer reuse and mismatched shapes.
#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::RandomTensor;
using weft::testing::KernelRunner;

TEST(AddNOpTest, HandValues) {
  KernelRunner runner;
  StatusOr<Tensor> z = runner.RunOne(
      "AddN", {Tensor::FromVector<int32_t>({1, 2}), Tensor::FromVector<int32_t>({10, 20}),
               Tensor::FromVector<int32_t>({100, 200})});
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_TENSOR_EQ(*z, Tensor::FromVector<int32_t>({111, 222}));
}

template <typename T>
void CheckAgainstReference(KernelRunner& runner, const TensorShape& shape, int n, uint32_t seed) {
  std::vector<Tensor> inputs;
  Tensor expected(DataTypeToEnum<T>::value, shape);
  for (int64_t i = 0; i < expected.NumElements(); ++i) expected.data<T>()[i] = T{0};
  for (int k = 0; k < n; ++k) {
    inputs.push_back(RandomTensor<T>(shape, seed + k));
    for (int64_t i = 0; i < expected.NumElements(); ++i) {
      expected.data<T>()[i] += inputs.back().data<T>()[i];
    }
  }
  StatusOr<Tensor> z = runner.RunOne("AddN", inputs);
  ASSERT_TRUE(z.ok()) << z.status();
  if constexpr (std::is_floating_point_v<T>) {
    EXPECT_TENSOR_NEAR(*z, expected, 1e-4, 1e-5) << "N=" << n << " " << shape;
  } else {
    EXPECT_TENSOR_EQ(*z, expected) << "N=" << n << " " << shape;
  }
}

TEST(AddNOpTest, MatchesReferenceLoop) {
  KernelRunner runner;
  for (int n = 1; n <= 9; ++n) {
    CheckAgainstReference<float>(runner, TensorShape({3, 4}), n, 10 * n);
    CheckAgainstReference<int64_t>(runner, TensorShape({5}), n, 10 * n + 1);
  }
  CheckAgainstReference<double>(runner, TensorShape({}), 3, 7);
  CheckAgainstReference<int32_t>(runner, TensorShape({0, 4}), 4, 8);
  CheckAgainstReference<float>(runner, TensorShape({100, 100}), 6, 9);  // thread pool
}

TEST(AddNOpTest, ReusesTheFirstInputsBuffer) {
  KernelRunner runner;
  Tensor a = RandomTensor<float>(TensorShape({8}), 1);
  const void* data = a.raw_data();
  std::vector<Tensor> inputs;
  inputs.push_back(std::move(a));
  inputs.push_back(RandomTensor<float>(TensorShape({8}), 2));
  StatusOr<Tensor> z = runner.RunOne("AddN", std::move(inputs));
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z->raw_data(), data);
}

TEST(AddNOpTest, RejectsDifferentShapesNamingTheNode) {
  KernelRunner runner;
  StatusOr<Tensor> z = runner.RunOne(
      "AddN", {Tensor::FromVector<float>({1, 2}), Tensor::FromVector<float>({1, 2, 3})});
  ASSERT_FALSE(z.ok());
  EXPECT_TRUE(IsInvalidArgument(z.status()));
  EXPECT_NE(z.status().message().find("node 'test_AddN' (AddN)"), std::string::npos) << z.status();
  StatusOr<std::vector<Tensor>> k = testing::RunKernelOnly(
      "AddN", {Tensor::FromVector<float>({1, 2}), Tensor::FromVector<float>({1, 2, 3})},
      {{"T", MakeAttrValue(DataType::kFloat)}, {"N", MakeAttrValue(2)}});
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().message(),
            "node 'k' (AddN): all inputs must have the same shape, but input 0 is [2] and input 1 "
            "is [3]");
}

}  // namespace
}  // namespace weft::kernels
