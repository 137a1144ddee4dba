#include <cmath>

#include <gtest/gtest.h>

#include "weft/kernels/state/philox.h"
#include "weft/kernels/testing/state_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::state {
namespace {

using testing::Contains;

using weft::testing::KernelRunner;

constexpr const char* kOps[] = {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"};

StatusOr<Tensor> RunRandom(KernelRunner& runner, const std::string& op, const Tensor& shape,
                           DataType dtype, int64_t seed, int64_t seed2) {
  return runner.RunOne(op, {shape},
                       {{"dtype", MakeAttrValue(dtype)},
                        {"seed", MakeAttrValue(seed)},
                        {"seed2", MakeAttrValue(seed2)}});
}

Tensor MustRunRandom(KernelRunner& runner, const std::string& op, const Tensor& shape,
                     DataType dtype, int64_t seed = 42, int64_t seed2 = 9) {
  StatusOr<Tensor> out = RunRandom(runner, op, shape, dtype, seed, seed2);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : Tensor();
}

struct Moments {
  double mean = 0, stddev = 0, min = 1e300, max = -1e300;
};

template <typename T>
Moments MomentsOf(const Tensor& t) {
  Moments m;
  double sum = 0, sum_sq = 0;
  for (T x : t.flat<T>()) {
    sum += x;
    sum_sq += double{x} * x;
    m.min = std::min<double>(m.min, x);
    m.max = std::max<double>(m.max, x);
  }
  double n = static_cast<double>(t.NumElements());
  m.mean = sum / n;
  m.stddev = std::sqrt(sum_sq / n - m.mean * m.mean);
  return m;
}

template <typename T>
void CheckDistributions() {
  constexpr DataType kType = DataTypeToEnum<T>::value;
  KernelRunner runner;
  Tensor shape = Tensor::FromVector<int32_t>({200, 250});
  Tensor uniform = MustRunRandom(runner, "RandomUniform", shape, kType);
  EXPECT_EQ(uniform.shape(), TensorShape({200, 250}));
  Moments u = MomentsOf<T>(uniform);
  EXPECT_GE(u.min, 0.0);
  EXPECT_LT(u.max, 1.0);
  EXPECT_NEAR(u.mean, 0.5, 0.01);
  EXPECT_NEAR(u.stddev, std::sqrt(1.0 / 12), 0.01);

  Moments normal = MomentsOf<T>(MustRunRandom(runner, "RandomStandardNormal", shape, kType));
  EXPECT_NEAR(normal.mean, 0.0, 0.02);
  EXPECT_NEAR(normal.stddev, 1.0, 0.02);
  EXPECT_LT(normal.min, -3.0);  // 50,000 draws reach beyond 3 stddev
  EXPECT_GT(normal.max, 3.0);

  Moments truncated = MomentsOf<T>(MustRunRandom(runner, "TruncatedNormal", shape, kType));
  EXPECT_GT(truncated.min, -2.0);
  EXPECT_LT(truncated.max, 2.0);
  EXPECT_NEAR(truncated.mean, 0.0, 0.02);
  EXPECT_NEAR(truncated.stddev, 0.8796, 0.02);  // stddev of N(0,1) truncated to (-2, 2)
}

TEST(RandomOpsTest, DistributionsFloat) { CheckDistributions<float>(); }
TEST(RandomOpsTest, DistributionsDouble) { CheckDistributions<double>(); }

// The documented layout: element i of the first run is lane i % G of the Philox block for
// counter {i / G, attempt 0}.
TEST(RandomOpsTest, UniformMatchesAReferenceLoop) {
  KernelRunner runner;
  Tensor f = MustRunRandom(runner, "RandomUniform", Tensor::FromVector<int64_t>({3, 7}),
                           DataType::kFloat, 5, 6);
  Tensor d = MustRunRandom(runner, "RandomUniform", Tensor::FromVector<int64_t>({21}),
                           DataType::kDouble, 5, 6);
  Philox4x32::Key key = KeyFromSeeds(5, 6);
  for (int i = 0; i < 21; ++i) {
    auto block = Philox4x32::Generate({static_cast<uint32_t>(i / 4), 0, 0, 0}, key);
    EXPECT_EQ(f.data<float>()[i], UniformFloat(block[i % 4])) << i;
    auto dblock = Philox4x32::Generate({static_cast<uint32_t>(i / 2), 0, 0, 0}, key);
    int lane = i % 2;
    EXPECT_EQ(d.data<double>()[i], UniformDouble(dblock[2 * lane], dblock[2 * lane + 1])) << i;
  }
}

TEST(RandomOpsTest, NormalMatchesAReferenceLoop) {
  KernelRunner runner;
  Tensor f = MustRunRandom(runner, "RandomStandardNormal", Tensor::FromVector<int32_t>({10}),
                           DataType::kFloat, 1, 0);
  Philox4x32::Key key = KeyFromSeeds(1, 0);
  for (int i = 0; i < 10; ++i) {
    auto block = Philox4x32::Generate({static_cast<uint32_t>(i / 4), 0, 0, 0}, key);
    int pair = (i % 4) / 2;
    float z0, z1;
    BoxMuller(UniformFloat(block[2 * pair]), UniformFloat(block[2 * pair + 1]), &z0, &z1);
    EXPECT_EQ(f.data<float>()[i], i % 2 == 0 ? z0 : z1) << i;
  }
}

TEST(RandomOpsTest, SameSeedsGiveSameValuesOnAnyThreadCount) {
  for (DataType dtype : {DataType::kFloat, DataType::kDouble}) {
    for (const char* op : kOps) {
      for (int n : {1, 7, 1000, 100'001}) {  // 100,001 elements take the parallel path
        Tensor shape = Tensor::FromVector<int32_t>({n});
        KernelRunner one(1), two(2);
        Tensor a = MustRunRandom(one, op, shape, dtype);
        Tensor b = MustRunRandom(two, op, shape, dtype);
        EXPECT_TENSOR_EQ(a, b) << op << " " << n;
        // Another seed2 gives other values.
        Tensor c = MustRunRandom(one, op, shape, dtype, 42, 10);
        EXPECT_FALSE(::weft::testing::TensorEqual(a, c)) << op << " " << n;
      }
    }
  }
}

TEST(RandomOpsTest, ZeroSeedsAreNondeterministic) {
  KernelRunner runner;
  Tensor shape = Tensor::FromVector<int32_t>({16});
  for (const char* op : kOps) {
    Tensor a = MustRunRandom(runner, op, shape, DataType::kFloat, 0, 0);
    Tensor b = MustRunRandom(runner, op, shape, DataType::kFloat, 0, 0);
    EXPECT_FALSE(::weft::testing::TensorEqual(a, b)) << op;
  }
}

TEST(RandomOpsTest, ScalarAndEmptyShapes) {
  KernelRunner runner;
  for (const char* op : kOps) {
    Tensor scalar =
        MustRunRandom(runner, op, Tensor(DataType::kInt32, TensorShape({0})), DataType::kDouble);
    EXPECT_EQ(scalar.shape(), TensorShape());
    Tensor empty = MustRunRandom(runner, op, Tensor::FromVector<int64_t>({3, 0}), DataType::kFloat);
    EXPECT_EQ(empty.shape(), TensorShape({3, 0}));
  }
}

TEST(RandomOpsTest, BadShapesAreInvalidArgument) {
  KernelRunner runner;
  for (const char* op : kOps) {
    Status negative =
        RunRandom(runner, op, Tensor::FromVector<int32_t>({2, -1}), DataType::kFloat, 1, 1)
            .status();
    EXPECT_TRUE(IsInvalidArgument(negative)) << negative;
    EXPECT_TRUE(Contains(negative, StrCat("test_", op))) << negative;
    Status matrix =
        RunRandom(runner, op, Tensor(DataType::kInt32, TensorShape({1, 1})), DataType::kFloat, 1, 1)
            .status();
    EXPECT_TRUE(IsInvalidArgument(matrix)) << matrix;
    EXPECT_TRUE(Contains(matrix, StrCat("test_", op))) << matrix;
  }
}

}  // namespace
}  // namespace weft::kernels::state
