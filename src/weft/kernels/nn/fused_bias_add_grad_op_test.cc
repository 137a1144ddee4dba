// Tests for the _FusedBiasAddGrad CPU kernel against the separate kernels it stands for (GeluGrad,
// Cast to bfloat16, BiasAddGrad): exact and approximate GELU and none, rows that are and are not
// a whole number of packets, many blocks of rows, results that do not depend on the thread count,
// empty inputs, and the errors it returns itself.
#include <string>
#include <utility>
#include <vector>

#include "weft/kernels/testing/bfloat16_test_util.h"
#include "weft/kernels/testing/nn_test_util.h"

namespace weft::kernels {
namespace {

using testing::AttrMap;
using testing::ExpectKernelError;
using testing::RandomTensor;
using testing::RunKernelOnly;
using testing::Widened;
using weft::testing::KernelRunner;

AttrMap Attrs(const std::string& activation, bool approximate = false) {
  return {{"activation", MakeAttrValue(activation)},
          {"approximate", MakeAttrValue(approximate)},
          {"num_features", MakeAttrValue(int64_t{activation == "Gelu" ? 1 : 0})}};
}

// backprop and bias_backprop as GeluGrad (unless `features` is empty), Cast and BiasAddGrad give
// them.
std::vector<Tensor> Separate(KernelRunner& runner, const Tensor& gradient, const Tensor* features,
                             bool approximate) {
  Tensor g = gradient;
  if (features != nullptr) {
    g = runner
            .RunOne("GeluGrad", {gradient, *features},
                    {{"approximate", MakeAttrValue(approximate)}})
            .value();
  }
  return {runner.RunOne("Cast", {g}, {{"DstT", MakeAttrValue(DataType::kBFloat16)}}).value(),
          runner.RunOne("BiasAddGrad", {g}).value()};
}

TEST(FusedBiasAddGradTest, MatchesTheSeparateKernels) {
  KernelRunner runner(2);
  for (const TensorShape& shape : {TensorShape({3, 5}), TensorShape({70, 24}),
                                   TensorShape({2, 300, 64}), TensorShape({4096, 9})}) {
    SCOPED_TRACE(StrCat("shape ", shape));
    const Tensor gradient = RandomTensor<float>(shape, 1, -2, 2);
    const Tensor features = RandomTensor<float>(shape, 2, -4, 4);
    for (const auto& [activation, approximate] : std::vector<std::pair<std::string, bool>>{
             {"None", false}, {"Gelu", false}, {"Gelu", true}}) {
      SCOPED_TRACE(StrCat(activation, " approximate ", approximate));
      const bool gelu = activation == "Gelu";
      std::vector<Tensor> inputs = {gradient};
      if (gelu) inputs.push_back(features);
      StatusOr<std::vector<Tensor>> fused =
          runner.Run("_FusedBiasAddGrad", inputs, Attrs(activation, approximate));
      ASSERT_TRUE(fused.ok()) << fused.status();
      const std::vector<Tensor> separate =
          Separate(runner, gradient, gelu ? &features : nullptr, approximate);
      ASSERT_EQ((*fused)[0].dtype(), DataType::kBFloat16);
      // The same element functor on the same values: within one bfloat16 rounding of each other
      // (a scalar tail and a packet may differ in the last float bit).
      EXPECT_TENSOR_NEAR(Widened((*fused)[0]), Widened(separate[0]), 1e-2, 8e-3);
      EXPECT_TENSOR_NEAR((*fused)[1], separate[1], 1e-4, 1e-5);
    }
  }
}

TEST(FusedBiasAddGradTest, ResultsDoNotDependOnTheThreadCount) {
  const Tensor gradient = RandomTensor<float>(TensorShape({5000, 40}), 3);
  const Tensor features = RandomTensor<float>(TensorShape({5000, 40}), 4);
  std::vector<std::vector<Tensor>> results;
  for (int threads : {1, 4}) {
    KernelRunner runner(threads);
    StatusOr<std::vector<Tensor>> fused =
        runner.Run("_FusedBiasAddGrad", {gradient, features}, Attrs("Gelu"));
    ASSERT_TRUE(fused.ok()) << fused.status();
    results.push_back(*fused);
  }
  EXPECT_TENSOR_EQ(results[1][0], results[0][0]);
  EXPECT_TENSOR_EQ(results[1][1], results[0][1]);
}

TEST(FusedBiasAddGradTest, EmptyInputsGiveZeroSums) {
  KernelRunner runner;
  StatusOr<std::vector<Tensor>> fused = runner.Run(
      "_FusedBiasAddGrad", {Tensor(DataType::kFloat, TensorShape({0, 3}))}, Attrs("None"));
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ((*fused)[0].shape(), TensorShape({0, 3}));
  EXPECT_TENSOR_EQ((*fused)[1], Tensor::FromVector<float>({0, 0, 0}));
}

TEST(FusedBiasAddGradTest, KernelErrorsNameTheInput) {
  ExpectKernelError(
      RunKernelOnly("_FusedBiasAddGrad", {RandomTensor<float>(TensorShape({3}), 1)}, Attrs("None"))
          .status(),
      "_FusedBiasAddGrad", "out_backprop must have rank at least 2, but has shape [3]");
  ExpectKernelError(RunKernelOnly("_FusedBiasAddGrad",
                                  {RandomTensor<float>(TensorShape({3, 2}), 1),
                                   RandomTensor<float>(TensorShape({2, 3}), 2)},
                                  Attrs("Gelu"))
                        .status(),
                    "_FusedBiasAddGrad",
                    "out_backprop and features must have the same shape, but are [3,2] and [2,3]");
}

}  // namespace
}  // namespace weft::kernels
