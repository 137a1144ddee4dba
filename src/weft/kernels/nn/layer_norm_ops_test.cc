// FusedLayerNorm and FusedLayerNormGrad against loops in long double (ranks 1 to 3, one channel,
// empty tensors), the gradient bit for bit at 1 and 4 threads, and inputs of the wrong shape named.
#include <cmath>

#include "weft/kernels/testing/bfloat16_test_util.h"
#include "weft/kernels/testing/nn_test_util.h"

namespace weft::kernels {
namespace {

using testing::AttrMap;
using testing::ExpectKernelError;
using testing::RandomTensor;
using testing::RunKernelOnly;
using weft::testing::KernelRunner;

struct Reference {
  Tensor y, mean, inverse_std, dx, dscale, doffset;
};

TensorShape WithoutLast(const TensorShape& shape) {
  std::vector<int64_t> dims = shape.dim_sizes();
  dims.pop_back();
  return TensorShape(dims);
}

// The forward and backward passes in long double, row by row.
template <typename T>
Reference ReferenceLayerNorm(const Tensor& x, const Tensor& scale, const Tensor& offset,
                             const Tensor& dy, double epsilon) {
  const int64_t c = x.dim_size(x.dims() - 1);
  const int64_t rows = c == 0 ? 0 : x.NumElements() / c;
  Reference r{Tensor(x.dtype(), x.shape()),
              Tensor(x.dtype(), WithoutLast(x.shape())),
              Tensor(x.dtype(), WithoutLast(x.shape())),
              Tensor(x.dtype(), x.shape()),
              Tensor(x.dtype(), TensorShape({c})),
              Tensor(x.dtype(), TensorShape({c}))};
  std::vector<long double> dscale(c, 0), doffset(c, 0);
  for (int64_t i = 0; i < rows; ++i) {
    const T* in = x.data<T>() + i * c;
    const T* grad = dy.data<T>() + i * c;
    long double mean = 0, variance = 0, mean_g = 0, mean_g_xhat = 0;
    for (int64_t j = 0; j < c; ++j) mean += in[j];
    mean /= c;
    for (int64_t j = 0; j < c; ++j) variance += (in[j] - mean) * (in[j] - mean);
    variance /= c;
    const long double inverse = 1 / std::sqrt(variance + epsilon);
    for (int64_t j = 0; j < c; ++j) {
      const long double xhat = (in[j] - mean) * inverse;
      const long double g = static_cast<long double>(grad[j]) * scale.data<T>()[j];
      r.y.data<T>()[i * c + j] = static_cast<T>(xhat * scale.data<T>()[j] + offset.data<T>()[j]);
      mean_g += g / c;
      mean_g_xhat += g * xhat / c;
      dscale[j] += grad[j] * xhat;
      doffset[j] += grad[j];
    }
    for (int64_t j = 0; j < c; ++j) {
      const long double xhat = (in[j] - mean) * inverse;
      const long double g = static_cast<long double>(grad[j]) * scale.data<T>()[j];
      r.dx.data<T>()[i * c + j] = static_cast<T>(inverse * (g - mean_g - xhat * mean_g_xhat));
    }
    r.mean.data<T>()[i] = static_cast<T>(mean);
    r.inverse_std.data<T>()[i] = static_cast<T>(inverse);
  }
  for (int64_t j = 0; j < c; ++j) {
    r.dscale.data<T>()[j] = static_cast<T>(dscale[j]);
    r.doffset.data<T>()[j] = static_cast<T>(doffset[j]);
  }
  return r;
}

template <typename T>
void CheckAgainstReference(const TensorShape& shape, double tolerance) {
  SCOPED_TRACE(StrCat("shape ", shape.DebugString(), " ", DataTypeName(DataTypeToEnum<T>::value)));
  const int64_t c = shape.dim_size(shape.dims() - 1);
  // An offset mean and a spread per row, as activations have.
  Tensor x = RandomTensor<T>(shape, 1, -3.0, 5.0);
  Tensor scale = RandomTensor<T>(TensorShape({c}), 2, 0.5, 1.5);
  Tensor offset = RandomTensor<T>(TensorShape({c}), 3);
  Tensor dy = RandomTensor<T>(shape, 4);
  const float epsilon = 1e-3f;
  Reference want = ReferenceLayerNorm<T>(x, scale, offset, dy, epsilon);
  KernelRunner runner;
  auto forward = runner.Run("FusedLayerNorm", {x, scale, offset},
                            AttrMap{{"epsilon", MakeAttrValue(epsilon)}});
  ASSERT_TRUE(forward.ok()) << forward.status();
  EXPECT_TENSOR_NEAR((*forward)[0], want.y, tolerance, tolerance);
  EXPECT_TENSOR_NEAR((*forward)[1], want.mean, tolerance, tolerance);
  EXPECT_TENSOR_NEAR((*forward)[2], want.inverse_std, tolerance, tolerance);
  auto backward = runner.Run("FusedLayerNormGrad", {dy, x, scale, (*forward)[1], (*forward)[2]});
  ASSERT_TRUE(backward.ok()) << backward.status();
  EXPECT_TENSOR_NEAR((*backward)[0], want.dx, tolerance, tolerance);
  // Sums over every row: a tolerance that grows with their count.
  const double rows = static_cast<double>(x.NumElements() / std::max<int64_t>(c, 1));
  EXPECT_TENSOR_NEAR((*backward)[1], want.dscale, tolerance * rows, tolerance);
  EXPECT_TENSOR_NEAR((*backward)[2], want.doffset, tolerance * rows, tolerance);
}

TEST(FusedLayerNormTest, MatchesLongDoubleLoops) {
  for (const TensorShape& shape : {TensorShape({7}), TensorShape({5, 1}), TensorShape({33, 64}),
                                   TensorShape({3, 70, 256}), TensorShape({0, 8})}) {
    CheckAgainstReference<double>(shape, 1e-12);
    CheckAgainstReference<float>(shape, 2e-5);
  }
}

TEST(FusedLayerNormTest, ParameterGradientsDoNotDependOnTheThreadCount) {
  const TensorShape shape({300, 48});
  Tensor x = RandomTensor<float>(shape, 5);
  Tensor scale = RandomTensor<float>(TensorShape({48}), 6);
  Tensor offset = RandomTensor<float>(TensorShape({48}), 7);
  Tensor dy = RandomTensor<float>(shape, 8);
  std::vector<std::vector<Tensor>> results;
  for (int threads : {1, 4}) {
    KernelRunner runner(threads);
    auto forward = runner.Run("FusedLayerNorm", {x, scale, offset});
    ASSERT_TRUE(forward.ok()) << forward.status();
    auto backward = runner.Run("FusedLayerNormGrad", {dy, x, scale, (*forward)[1], (*forward)[2]});
    ASSERT_TRUE(backward.ok()) << backward.status();
    results.push_back(*backward);
  }
  for (int i = 0; i < 3; ++i) EXPECT_TENSOR_EQ(results[0][i], results[1][i]);
}

// _FusedLayerNorm: the same mean and inverse_std, and y rounded to bfloat16 as a Cast would round
// FusedLayerNorm's, on 2 threads.
TEST(FusedLayerNormTest, TheBFloat16OutputIsTheRoundedFloat32One) {
  KernelRunner runner(2);
  for (const TensorShape& shape : {TensorShape({5, 3}), TensorShape({300, 256})}) {
    SCOPED_TRACE(StrCat("shape ", shape));
    const int64_t c = shape.dim_size(1);
    Tensor x = RandomTensor<float>(shape, 9);
    Tensor scale = RandomTensor<float>(TensorShape({c}), 10);
    Tensor offset = RandomTensor<float>(TensorShape({c}), 11);
    auto fused = runner.Run("_FusedLayerNorm", {x, scale, offset});
    ASSERT_TRUE(fused.ok()) << fused.status();
    auto plain = runner.Run("FusedLayerNorm", {x, scale, offset});
    ASSERT_TRUE(plain.ok()) << plain.status();
    auto rounded =
        runner.RunOne("Cast", {(*plain)[0]}, {{"DstT", MakeAttrValue(DataType::kBFloat16)}});
    ASSERT_TRUE(rounded.ok()) << rounded.status();
    ASSERT_EQ((*fused)[0].dtype(), DataType::kBFloat16);
    EXPECT_TENSOR_EQ((*fused)[0], *rounded);
    EXPECT_TENSOR_EQ((*fused)[1], (*plain)[1]);
    EXPECT_TENSOR_EQ((*fused)[2], (*plain)[2]);
  }
}

TEST(FusedLayerNormTest, InputsOfTheWrongShapeAreNamed) {
  KernelRunner runner;
  Tensor x = RandomTensor<float>(TensorShape({4, 6}), 1);
  Tensor six = RandomTensor<float>(TensorShape({6}), 2);
  Tensor five = RandomTensor<float>(TensorShape({5}), 3);
  ExpectKernelError(RunKernelOnly("FusedLayerNorm", {x, five, six}, {}).status(), "FusedLayerNorm",
                    "scale must be [6]");
  ExpectKernelError(RunKernelOnly("FusedLayerNorm", {x, six, five}, {}).status(), "FusedLayerNorm",
                    "offset must be [6]");
  ExpectKernelError(
      RunKernelOnly("FusedLayerNorm", {Tensor::Scalar<float>(1), six, six}, {}).status(),
      "FusedLayerNorm", "x must have rank at least 1");
  Tensor rows = RandomTensor<float>(TensorShape({4}), 4);
  ExpectKernelError(RunKernelOnly("FusedLayerNormGrad", {six, x, six, rows, rows}, {}).status(),
                    "FusedLayerNormGrad", "y_backprop [6] must have the shape of x [4,6]");
  ExpectKernelError(RunKernelOnly("FusedLayerNormGrad", {x, x, six, five, rows}, {}).status(),
                    "FusedLayerNormGrad", "mean must be [4]");
  // The shape function says so before any kernel runs.
  EXPECT_FALSE(runner.Run("FusedLayerNorm", {x, five, six}).ok());
  EXPECT_FALSE(
      runner.Run("FusedLayerNorm", {x, six, six}, AttrMap{{"epsilon", MakeAttrValue(-1.0f)}}).ok());
}

}  // namespace
}  // namespace weft::kernels
