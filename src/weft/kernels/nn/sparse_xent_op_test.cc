// Tests for SparseSoftmaxCrossEntropyWithLogits: hand-computed values, a reference loop for both
// label dtypes, the backprop against central differences of the loss in float64, empty batches,
// and errors for out-of-range labels (naming the label and its row) and bad shapes.
#include <cmath>

#include "weft/kernels/testing/nn_test_util.h"

namespace weft::kernels {
namespace {

using testing::AttrMap;
using testing::ExpectKernelError;
using testing::NumericGradient;
using testing::OwnedInputs;
using testing::RandomIntegers;
using testing::RandomTensor;
using testing::RunKernelOnly;
using testing::WeightedSum;
using weft::testing::KernelRunner;

constexpr char kOp[] = "SparseSoftmaxCrossEntropyWithLogits";

template <typename T, typename Label>
void ReferenceXent(const Tensor& features, const Tensor& labels, Tensor* loss, Tensor* backprop) {
  const int64_t batch = features.dim_size(0), classes = features.dim_size(1);
  *loss = Tensor(features.dtype(), TensorShape({batch}));
  *backprop = Tensor(features.dtype(), features.shape());
  for (int64_t b = 0; b < batch; ++b) {
    const T* x = features.data<T>() + b * classes;
    const Label label = labels.data<Label>()[b];
    long double max = x[0], sum = 0;
    for (int64_t c = 1; c < classes; ++c) max = std::max<long double>(max, x[c]);
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(x[c] - max);
    loss->data<T>()[b] = static_cast<T>(std::log(sum) + max - x[label]);
    for (int64_t c = 0; c < classes; ++c) {
      backprop->data<T>()[b * classes + c] =
          static_cast<T>(std::exp(x[c] - max) / sum - (c == label ? 1 : 0));
    }
  }
}

TEST(SparseXentTest, HandComputed) {
  KernelRunner runner;
  // Row 0: logits [0, ln 3], label 1: p = [1/4, 3/4], loss = -ln(3/4).
  // Row 1: logits [2, 2], label 0: p = [1/2, 1/2], loss = ln 2.
  Tensor features = Tensor::FromVector<double>({0, std::log(3.0), 2, 2}, TensorShape({2, 2}));
  StatusOr<std::vector<Tensor>> out =
      runner.Run(kOp, {features, Tensor::FromVector<int64_t>({1, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TENSOR_NEAR((*out)[0], Tensor::FromVector<double>({-std::log(0.75), std::log(2.0)}), 1e-15,
                     0);
  EXPECT_TENSOR_NEAR((*out)[1],
                     Tensor::FromVector<double>({0.25, -0.25, -0.5, 0.5}, TensorShape({2, 2})),
                     1e-15, 0);
}

template <typename T, typename Label>
void CheckAgainstReference(double tolerance) {
  KernelRunner runner;
  uint32_t seed = 1;
  for (const TensorShape& shape : {TensorShape({1, 1}), TensorShape({4, 10}),
                                   TensorShape({128, 10}), TensorShape({3000, 17})}) {
    SCOPED_TRACE(StrCat("shape ", shape));
    Tensor features = RandomTensor<T>(shape, ++seed, -30, 30);
    Tensor labels =
        RandomIntegers<Label>(TensorShape({shape.dim_size(0)}), ++seed, 0, shape.dim_size(1) - 1);
    Tensor expected_loss, expected_backprop;
    ReferenceXent<T, Label>(features, labels, &expected_loss, &expected_backprop);
    StatusOr<std::vector<Tensor>> out = runner.Run(kOp, {features, labels});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TENSOR_NEAR((*out)[0], expected_loss, tolerance, tolerance);
    EXPECT_TENSOR_NEAR((*out)[1], expected_backprop, tolerance, tolerance);
    // Features that nothing else holds: backprop is written over them.
    Tensor own_features = features.DeepCopy();
    const void* buffer = own_features.raw_data();
    out = runner.Run(kOp, OwnedInputs(std::move(own_features), labels));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TENSOR_NEAR((*out)[0], expected_loss, tolerance, tolerance);
    EXPECT_TENSOR_NEAR((*out)[1], expected_backprop, tolerance, tolerance);
    EXPECT_EQ((*out)[1].raw_data(), buffer);
  }
}

TEST(SparseXentTest, MatchesReference) {
  CheckAgainstReference<float, int64_t>(1e-5);
  CheckAgainstReference<float, int32_t>(1e-5);
  CheckAgainstReference<double, int64_t>(1e-13);
  CheckAgainstReference<double, int32_t>(1e-13);
}

TEST(SparseXentTest, BackpropMatchesNumericGradientOfLoss) {
  KernelRunner runner;
  Tensor features = RandomTensor<double>({3, 5}, 4, -3, 3);
  Tensor labels = Tensor::FromVector<int32_t>({4, 0, 2});
  Tensor weights = RandomTensor<double>({3}, 5);
  Tensor numeric = NumericGradient(
      [&](const Tensor& x) {
        StatusOr<std::vector<Tensor>> out = runner.Run(kOp, {x, labels});
        return out.ok() ? WeightedSum((*out)[0], weights) : 0.0;
      },
      features);
  StatusOr<std::vector<Tensor>> out = runner.Run(kOp, {features, labels});
  ASSERT_TRUE(out.ok()) << out.status();
  // d(sum_b w_b loss_b)/dx[b, c] = w_b * backprop[b, c].
  Tensor analytic = (*out)[1].DeepCopy();
  for (int64_t i = 0; i < analytic.NumElements(); ++i) {
    analytic.data<double>()[i] *= weights.data<double>()[i / 5];
  }
  EXPECT_TENSOR_NEAR(analytic, numeric, 1e-8, 1e-8);
}

TEST(SparseXentTest, EmptyBatch) {
  KernelRunner runner;
  StatusOr<std::vector<Tensor>> out = runner.Run(
      kOp,
      {Tensor(DataType::kFloat, TensorShape({0, 10})), Tensor(DataType::kInt64, TensorShape({0}))});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({0}));
  EXPECT_EQ((*out)[1].shape(), TensorShape({0, 10}));
}

TEST(SparseXentTest, OutOfRangeLabelNamesValueAndRow) {
  KernelRunner runner;
  Tensor features = RandomTensor<float>({3, 10}, 1);
  ExpectKernelError(runner.Run(kOp, {features, Tensor::FromVector<int64_t>({1, 2, 10})}).status(),
                    kOp, "label 10 at row 2 is outside the valid range [0, 10)");
  ExpectKernelError(runner.Run(kOp, {features, Tensor::FromVector<int32_t>({1, -1, 3})}).status(),
                    kOp, "label -1 at row 1 is outside the valid range [0, 10)");
  ExpectKernelError(runner
                        .Run(kOp, {Tensor(DataType::kFloat, TensorShape({2, 0})),
                                   Tensor::FromVector<int64_t>({0, 0})})
                        .status(),
                    kOp, "label 0 at row 0 is outside the valid range [0, 0)");
}

TEST(SparseXentTest, ShapeErrorsNameTheNode) {
  KernelRunner runner;
  ExpectKernelError(
      runner.Run(kOp, {RandomTensor<float>({3, 10}, 1), Tensor::FromVector<int64_t>({1, 2})})
          .status(),
      kOp, "batch sizes of features and labels must be equal, but are 3 and 2");
  ExpectKernelError(
      runner.Run(kOp, {RandomTensor<float>({10}, 1), Tensor::FromVector<int64_t>({1})}).status(),
      kOp, "rank 2");
  AttrMap attrs = {{"T", MakeAttrValue(DataType::kFloat)}};
  ExpectKernelError(
      RunKernelOnly(kOp, {RandomTensor<float>({3, 10}, 1), Tensor::FromVector<int64_t>({1, 2})},
                    attrs)
          .status(),
      kOp, "labels must be a vector of 3");
  ExpectKernelError(
      RunKernelOnly(kOp, {RandomTensor<float>({10}, 1), Tensor::FromVector<int64_t>({1})}, attrs)
          .status(),
      kOp, "features must be rank 2");
}

}  // namespace
}  // namespace weft::kernels
