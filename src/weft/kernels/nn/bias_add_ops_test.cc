// Tests for BiasAdd and BiasAddGrad: hand-computed values, reference loops over ranks 2 to 4 (empty
// and large tensors included), integer dtypes, and error paths.
#include "weft/kernels/testing/nn_test_util.h"

namespace weft::kernels {
namespace {

using testing::AttrMap;
using testing::ExpectKernelError;
using testing::OwnedInputs;
using testing::RandomIntegers;
using testing::RandomTensor;
using testing::RunKernelOnly;
using weft::testing::KernelRunner;

template <typename T>
Tensor ReferenceBiasAdd(const Tensor& value, const Tensor& bias) {
  Tensor out(value.dtype(), value.shape());
  const int64_t channels = bias.NumElements();
  for (int64_t i = 0; i < value.NumElements(); ++i) {
    out.data<T>()[i] = value.data<T>()[i] + bias.data<T>()[i % channels];
  }
  return out;
}

template <typename T>
Tensor ReferenceBiasAddGrad(const Tensor& grad) {
  const int64_t channels = grad.dim_size(grad.dims() - 1);
  std::vector<double> sums(channels, 0.0);
  for (int64_t i = 0; i < grad.NumElements(); ++i) sums[i % channels] += grad.data<T>()[i];
  Tensor out(grad.dtype(), TensorShape({channels}));
  for (int64_t c = 0; c < channels; ++c) out.data<T>()[c] = static_cast<T>(sums[c]);
  return out;
}

TEST(BiasAddTest, HandComputed) {
  KernelRunner runner;
  Tensor value = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Tensor bias = Tensor::FromVector<float>({10, 20, 30});
  StatusOr<Tensor> out = runner.RunOne("BiasAdd", {value, bias});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TENSOR_EQ(*out, Tensor::FromVector<float>({11, 22, 33, 14, 25, 36}, TensorShape({2, 3})));
  StatusOr<Tensor> grad = runner.RunOne("BiasAddGrad", {value});
  ASSERT_TRUE(grad.ok()) << grad.status();
  EXPECT_TENSOR_EQ(*grad, Tensor::FromVector<float>({5, 7, 9}));
}

template <typename T>
void CheckAgainstReference() {
  KernelRunner runner;
  uint32_t seed = 1;
  for (const TensorShape& shape :
       {TensorShape({3, 4}), TensorShape({2, 3, 5}), TensorShape({4, 7, 6, 3}), TensorShape({0, 4}),
        TensorShape({5, 0}), TensorShape({64, 30, 30, 8}), TensorShape({100000, 1})}) {
    SCOPED_TRACE(StrCat("shape ", shape));
    // Whole numbers, so that every dtype's sums are exact whatever the order of summation.
    Tensor value = RandomIntegers<T>(shape, ++seed, -50, 50);
    Tensor bias =
        RandomIntegers<T>(TensorShape({shape.dim_size(shape.dims() - 1)}), ++seed, -50, 50);
    StatusOr<Tensor> out = runner.RunOne("BiasAdd", {value, bias});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TENSOR_EQ(*out, ReferenceBiasAdd<T>(value, bias));
    Tensor own_value = value.DeepCopy();
    const void* buffer = own_value.raw_data();
    StatusOr<Tensor> in_place = runner.RunOne("BiasAdd", OwnedInputs(std::move(own_value), bias));
    ASSERT_TRUE(in_place.ok()) << in_place.status();
    EXPECT_TENSOR_EQ(*in_place, ReferenceBiasAdd<T>(value, bias));
    if (shape.num_elements() > 0) {
      EXPECT_EQ(in_place->raw_data(), buffer);
    }
    StatusOr<Tensor> grad = runner.RunOne("BiasAddGrad", {value});
    ASSERT_TRUE(grad.ok()) << grad.status();
    EXPECT_TENSOR_EQ(*grad, ReferenceBiasAddGrad<T>(value));
  }
}

TEST(BiasAddTest, MatchesReferenceFloat) { CheckAgainstReference<float>(); }
TEST(BiasAddTest, MatchesReferenceDouble) { CheckAgainstReference<double>(); }
TEST(BiasAddTest, MatchesReferenceInt32) { CheckAgainstReference<int32_t>(); }
TEST(BiasAddTest, MatchesReferenceInt64) { CheckAgainstReference<int64_t>(); }

TEST(BiasAddTest, ErrorsNameTheNode) {
  KernelRunner runner;
  ExpectKernelError(
      runner.RunOne("BiasAdd", {RandomTensor<float>({2, 3}, 1), RandomTensor<float>({4}, 2)})
          .status(),
      "BiasAdd", "last dimension of value and size of bias must be equal");
  ExpectKernelError(
      runner.RunOne("BiasAdd", {RandomTensor<float>({3}, 1), RandomTensor<float>({3}, 2)}).status(),
      "BiasAdd", "rank at least 2");
  ExpectKernelError(
      runner.RunOne("BiasAdd", {RandomTensor<float>({2, 3}, 1), RandomTensor<float>({1, 3}, 2)})
          .status(),
      "BiasAdd", "rank 1");
  ExpectKernelError(
      runner
          .RunOne("BiasAdd", {RandomTensor<float>({2, 3}, 1), RandomTensor<float>({3}, 2)},
                  {{"data_format", MakeAttrValue("NCHW")}})
          .status(),
      "BiasAdd", "data_format NCHW is not supported");
  ExpectKernelError(runner.RunOne("BiasAddGrad", {RandomTensor<float>({3}, 1)}).status(),
                    "BiasAddGrad", "rank at least 2");
}

TEST(BiasAddTest, KernelChecksShapesWithoutShapeInference) {
  AttrMap attrs = {{"T", MakeAttrValue(DataType::kFloat)}};
  ExpectKernelError(
      RunKernelOnly("BiasAdd", {RandomTensor<float>({2, 3}, 1), RandomTensor<float>({4}, 2)}, attrs)
          .status(),
      "BiasAdd", "bias must be a vector of 3 elements");
  ExpectKernelError(RunKernelOnly("BiasAddGrad", {RandomTensor<float>({3}, 1)}, attrs).status(),
                    "BiasAddGrad", "out_backprop must have rank at least 2");
  attrs["data_format"] = MakeAttrValue("NCHW");
  ExpectKernelError(
      RunKernelOnly("BiasAdd", {RandomTensor<float>({2, 3}, 1), RandomTensor<float>({3}, 2)}, attrs)
          .status(),
      "BiasAdd", "data_format NCHW is not supported");
}

}  // namespace
}  // namespace weft::kernels
