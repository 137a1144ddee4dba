// Tests for Softmax and LogSoftmax over the last dimension: hand-computed values, stability with
// huge logits (rank 2 and [batch, time, classes]), reference loops over ranks 1 to 4 (empty and
// large tensors included), and error paths.
#include <cmath>

#include "weft/kernels/testing/nn_test_util.h"

namespace weft::kernels {
namespace {

using testing::ExpectKernelError;
using testing::OwnedInputs;
using testing::RandomTensor;
using testing::RunKernelOnly;
using weft::testing::KernelRunner;

// Softmax (or LogSoftmax) of each row of the last dimension, computed in long double.
template <typename T>
Tensor ReferenceSoftmax(const Tensor& logits, bool log) {
  Tensor out(logits.dtype(), logits.shape());
  const int64_t classes = logits.dim_size(logits.dims() - 1);
  if (logits.NumElements() == 0) return out;
  for (int64_t r = 0; r < logits.NumElements() / classes; ++r) {
    const T* x = logits.data<T>() + r * classes;
    long double max = x[0];
    for (int64_t c = 1; c < classes; ++c) max = std::max<long double>(max, x[c]);
    long double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<long double>(x[c]) - max);
    for (int64_t c = 0; c < classes; ++c) {
      const long double shifted = static_cast<long double>(x[c]) - max;
      out.data<T>()[r * classes + c] =
          static_cast<T>(log ? shifted - std::log(sum) : std::exp(shifted) / sum);
    }
  }
  return out;
}

TEST(SoftmaxTest, HandComputed) {
  KernelRunner runner;
  // softmax([0, ln 3]) = [1/4, 3/4]; a row of equal values is uniform.
  Tensor logits = Tensor::FromVector<double>({0, std::log(3.0), 5, 5}, TensorShape({2, 2}));
  StatusOr<Tensor> softmax = runner.RunOne("Softmax", {logits});
  ASSERT_TRUE(softmax.ok()) << softmax.status();
  EXPECT_TENSOR_NEAR(
      *softmax, Tensor::FromVector<double>({0.25, 0.75, 0.5, 0.5}, TensorShape({2, 2})), 1e-15, 0);
  StatusOr<Tensor> log_softmax = runner.RunOne("LogSoftmax", {logits});
  ASSERT_TRUE(log_softmax.ok()) << log_softmax.status();
  EXPECT_TENSOR_NEAR(
      *log_softmax,
      Tensor::FromVector<double>({std::log(0.25), std::log(0.75), std::log(0.5), std::log(0.5)},
                                 TensorShape({2, 2})),
      1e-15, 0);
}

TEST(SoftmaxTest, StableForHugeLogits) {
  KernelRunner runner;
  Tensor logits = Tensor::FromVector<float>({1000, 1000 + std::log(3.0f), -1000, -1000});
  StatusOr<Tensor> softmax = runner.RunOne("Softmax", {logits.Reshaped(TensorShape({2, 2}))});
  ASSERT_TRUE(softmax.ok()) << softmax.status();
  EXPECT_TENSOR_NEAR(*softmax,
                     Tensor::FromVector<float>({0.25f, 0.75f, 0.5f, 0.5f}, TensorShape({2, 2})),
                     1e-4, 1e-4);
  StatusOr<Tensor> log_softmax =
      runner.RunOne("LogSoftmax", {Tensor::FromVector<float>({1e30f, 0})});
  ASSERT_TRUE(log_softmax.ok()) << log_softmax.status();
  EXPECT_TENSOR_EQ(*log_softmax, Tensor::FromVector<float>({0, -1e30f}));
}

// [batch, time, classes] logits whose exponentials overflow (e^90 in float, e^710 in double), up to
// the largest finite values: each row is shifted by its own maximum, so every output is finite.
template <typename T>
void CheckHugeLogitsOfRankThree(const std::vector<T>& values, double tolerance) {
  KernelRunner runner;
  Tensor logits = Tensor::FromVector<T>(values, TensorShape({2, 2, 3}));
  for (bool log : {false, true}) {
    StatusOr<Tensor> out = runner.RunOne(log ? "LogSoftmax" : "Softmax", {logits});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TENSOR_NEAR(*out, ReferenceSoftmax<T>(logits, log), tolerance, tolerance) << log;
    for (int64_t i = 0; i < out->NumElements(); ++i) {
      EXPECT_TRUE(std::isfinite(out->data<T>()[i])) << "element " << i << " log " << log;
    }
  }
}

TEST(SoftmaxTest, StableForHugeLogitsOfRankThree) {
  CheckHugeLogitsOfRankThree<float>(
      {1000, 1000, 1000, 88, 89, 90, 3e38f, 0, 3e38f, -1000, -999, -998}, 1e-5);
  CheckHugeLogitsOfRankThree<double>(
      {1000, 1000, 1000, 708, 709, 710, 1e308, 0, 1e308, -800, -799, -798}, 1e-13);
}

template <typename T>
void CheckAgainstReference(double tolerance) {
  KernelRunner runner;
  uint32_t seed = 1;
  for (const TensorShape& shape :
       {TensorShape({1}), TensorShape({7}), TensorShape({3, 10}), TensorShape({2, 3, 4}),
        TensorShape({2, 3, 4, 5}), TensorShape({0, 5}), TensorShape({4, 0}),
        TensorShape({2000, 33})}) {
    SCOPED_TRACE(StrCat("shape ", shape));
    Tensor logits = RandomTensor<T>(shape, ++seed, -20, 20);
    for (bool log : {false, true}) {
      StatusOr<Tensor> out = runner.RunOne(log ? "LogSoftmax" : "Softmax", {logits});
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_TENSOR_NEAR(*out, ReferenceSoftmax<T>(logits, log), tolerance, tolerance);
      // logits that nothing else holds are overwritten by the result.
      Tensor own_logits = logits.DeepCopy();
      const void* buffer = own_logits.raw_data();
      StatusOr<Tensor> in_place =
          runner.RunOne(log ? "LogSoftmax" : "Softmax", OwnedInputs(std::move(own_logits)));
      ASSERT_TRUE(in_place.ok()) << in_place.status();
      EXPECT_TENSOR_NEAR(*in_place, ReferenceSoftmax<T>(logits, log), tolerance, tolerance);
      if (shape.num_elements() > 0) {
        EXPECT_EQ(in_place->raw_data(), buffer);
      }
    }
  }
}

TEST(SoftmaxTest, MatchesReferenceFloat) { CheckAgainstReference<float>(1e-5); }
TEST(SoftmaxTest, MatchesReferenceDouble) { CheckAgainstReference<double>(1e-13); }

TEST(SoftmaxTest, ErrorsNameTheNode) {
  KernelRunner runner;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    ExpectKernelError(runner.RunOne(op, {Tensor::Scalar<float>(1)}).status(), op,
                      "rank at least 1");
    ExpectKernelError(
        RunKernelOnly(op, {Tensor::Scalar<float>(1)}, {{"T", MakeAttrValue(DataType::kFloat)}})
            .status(),
        op, "logits must have rank at least 1");
  }
}

}  // namespace
}  // namespace weft::kernels
