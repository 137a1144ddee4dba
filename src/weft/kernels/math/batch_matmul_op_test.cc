// Tests for the BatchMatMulV2 kernel: hand values, every adj_x/adj_y combination for each dtype
// against a reference loop over broadcast batch dims, the batch split over threads and a product
// split within (both bit-for-bit against one thread), empty dimensions, and the errors the shape
// function and the kernel itself return.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/scoped_blas_threads.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::BroadcastFlatIndex;
using testing::RandomTensor;
using testing::Unravel;
using weft::testing::KernelRunner;

std::map<std::string, proto::AttrValue> Adjoints(bool adj_x, bool adj_y) {
  return {{"adj_x", MakeAttrValue(adj_x)}, {"adj_y", MakeAttrValue(adj_y)}};
}

// out[b] = op(x[b]) op(y[b]) by the definition, the batch dims broadcast (assumed valid).
template <typename T>
Tensor ReferenceBatchMatMul(const Tensor& x, const Tensor& y, bool adj_x, bool adj_y) {
  const std::vector<int64_t>& xd = x.shape().dim_sizes();
  const std::vector<int64_t>& yd = y.shape().dim_sizes();
  const size_t rx = xd.size(), ry = yd.size();
  const int64_t m = xd[rx - (adj_x ? 1 : 2)], k = xd[rx - (adj_x ? 2 : 1)];
  const int64_t n = yd[ry - (adj_y ? 2 : 1)];
  const std::vector<int64_t> xb(xd.begin(), xd.end() - 2), yb(yd.begin(), yd.end() - 2);
  const size_t rank = std::max(xb.size(), yb.size());
  std::vector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i < rank - xb.size() ? 1 : xb[i - (rank - xb.size())];
    const int64_t b = i < rank - yb.size() ? 1 : yb[i - (rank - yb.size())];
    out[i] = a == 1 ? b : a;
  }
  int64_t count = 1;
  for (int64_t d : out) count *= d;
  std::vector<int64_t> out_dims = out;
  out_dims.push_back(m);
  out_dims.push_back(n);
  Tensor z(x.dtype(), TensorShape(out_dims));
  for (int64_t b = 0; b < count; ++b) {
    const std::vector<int64_t> index = Unravel(b, out);
    const T* xm = x.data<T>() + BroadcastFlatIndex(index, xb) * m * k;
    const T* ym = y.data<T>() + BroadcastFlatIndex(index, yb) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        T sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          sum += (adj_x ? xm[p * m + i] : xm[i * k + p]) * (adj_y ? ym[j * k + p] : ym[p * n + j]);
        }
        z.data<T>()[(b * m + i) * n + j] = sum;
      }
    }
  }
  return z;
}

// x's batch dims, y's batch dims, then M, K, N.
struct Case {
  std::vector<int64_t> x_batch, y_batch;
  int64_t m, k, n;
};

TensorShape Stored(std::vector<int64_t> batch, int64_t rows, int64_t cols, bool adjoint) {
  batch.push_back(adjoint ? cols : rows);
  batch.push_back(adjoint ? rows : cols);
  return TensorShape(batch);
}

template <typename T>
void CheckAgainstReference(KernelRunner& runner, const Case& c, uint32_t seed) {
  for (bool adj_x : {false, true}) {
    for (bool adj_y : {false, true}) {
      Tensor x = RandomTensor<T>(Stored(c.x_batch, c.m, c.k, adj_x), seed, -3, 3);
      Tensor y = RandomTensor<T>(Stored(c.y_batch, c.k, c.n, adj_y), seed + 1, -3, 3);
      Tensor expected = ReferenceBatchMatMul<T>(x, y, adj_x, adj_y);
      StatusOr<Tensor> z = runner.RunOne("BatchMatMulV2", {x, y}, Adjoints(adj_x, adj_y));
      ASSERT_TRUE(z.ok()) << z.status();
      if constexpr (std::is_floating_point_v<T>) {
        EXPECT_TENSOR_NEAR(*z, expected, 1e-4, 1e-5)
            << x.shape() << " x " << y.shape() << " adj " << adj_x << adj_y;
      } else {
        EXPECT_TENSOR_EQ(*z, expected)
            << x.shape() << " x " << y.shape() << " adj " << adj_x << adj_y;
      }
    }
  }
}

const std::vector<Case>& Cases() {
  static const auto* const cases = new std::vector<Case>{
      {{}, {}, 3, 4, 5},                // plain matrices
      {{3}, {3}, 2, 5, 4},              // equal batch dims
      {{2, 1}, {5}, 3, 4, 6},           // [2,1,3,4] x [5,4,6] -> [2,5,3,6]
      {{}, {3}, 4, 2, 3},               // rank 2 x rank 3
      {{2, 3}, {}, 3, 3, 2},            // rank 4 x rank 2
      {{1, 4, 1}, {3, 1, 2}, 2, 3, 2},  // both sides broadcast
      {{1}, {1}, 1, 1, 1},
  };
  return *cases;
}

TEST(BatchMatMulOpTest, HandValues) {
  KernelRunner runner;
  // Two [2,2] matrices times one [2,1] broadcast to both.
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}, TensorShape({2, 2, 2}));
  Tensor y = Tensor::FromVector<float>({1, 10}, TensorShape({2, 1}));
  StatusOr<Tensor> z = runner.RunOne("BatchMatMulV2", {x, y});
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_TENSOR_EQ(*z, Tensor::FromVector<float>({21, 43, 65, 87}, TensorShape({2, 2, 1})));
  // x^T per matrix.
  StatusOr<Tensor> t = runner.RunOne("BatchMatMulV2", {x, y}, Adjoints(true, false));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TENSOR_EQ(*t, Tensor::FromVector<float>({31, 42, 75, 86}, TensorShape({2, 2, 1})));
}

TEST(BatchMatMulOpTest, MatchesReferenceLoopForEveryAdjointAndDtype) {
  KernelRunner runner;
  uint32_t seed = 1;
  for (const Case& c : Cases()) {
    CheckAgainstReference<float>(runner, c, seed += 2);
    CheckAgainstReference<double>(runner, c, seed += 2);
  }
  CheckAgainstReference<int32_t>(runner, Cases()[2], 40);
  CheckAgainstReference<int64_t>(runner, Cases()[3], 41);
}

// DLRM's interaction (W7): 512 products of [27,16] x [16,27], the batch split over the threads.
TEST(BatchMatMulOpTest, ManySmallMatricesSplitOverThreadsMatchOneThreadBitForBit) {
  weft::testing::ScopedBlasThreads blas(1);
  KernelRunner one_thread(1), two_threads(2);
  for (bool double_type : {false, true}) {
    Tensor x = double_type ? RandomTensor<double>(TensorShape({512, 27, 16}), 3, -1, 1)
                           : RandomTensor<float>(TensorShape({512, 27, 16}), 3, -1, 1);
    StatusOr<Tensor> whole = one_thread.RunOne("BatchMatMulV2", {x, x}, Adjoints(false, true));
    StatusOr<Tensor> split = two_threads.RunOne("BatchMatMulV2", {x, x}, Adjoints(false, true));
    ASSERT_TRUE(whole.ok()) << whole.status();
    ASSERT_TRUE(split.ok()) << split.status();
    EXPECT_EQ(split->shape(), TensorShape({512, 27, 27}));
    EXPECT_TENSOR_EQ(*split, *whole);
    EXPECT_TENSOR_NEAR(*split,
                       double_type ? ReferenceBatchMatMul<double>(x, x, false, true)
                                   : ReferenceBatchMatMul<float>(x, x, false, true),
                       1e-4, 1e-5);
  }
}

// Fewer products than threads, each large: every product is split over the threads instead.
TEST(BatchMatMulOpTest, FewLargeProductsSplitWithinMatchOneThreadBitForBit) {
  weft::testing::ScopedBlasThreads blas(1);
  KernelRunner one_thread(1), three_threads(3);
  const Case large{{2}, {1}, 301, 100, 60};
  for (bool adj_x : {false, true}) {
    for (bool adj_y : {false, true}) {
      Tensor x = RandomTensor<float>(Stored(large.x_batch, large.m, large.k, adj_x), 5, -1, 1);
      Tensor y = RandomTensor<float>(Stored(large.y_batch, large.k, large.n, adj_y), 6, -1, 1);
      StatusOr<Tensor> whole = one_thread.RunOne("BatchMatMulV2", {x, y}, Adjoints(adj_x, adj_y));
      StatusOr<Tensor> split =
          three_threads.RunOne("BatchMatMulV2", {x, y}, Adjoints(adj_x, adj_y));
      ASSERT_TRUE(whole.ok()) << whole.status();
      ASSERT_TRUE(split.ok()) << split.status();
      EXPECT_TENSOR_EQ(*split, *whole) << adj_x << adj_y;
    }
  }
  CheckAgainstReference<double>(three_threads, large, 7);
}

TEST(BatchMatMulOpTest, EmptyDimensionsGiveAnEmptyOrZeroOutput) {
  KernelRunner runner;
  struct Empty {
    TensorShape x, y, out;
  };
  for (const Empty& e :
       {Empty{{0, 3, 4}, {4, 5}, {0, 3, 5}}, Empty{{0, 1, 2, 3}, {4, 3, 2}, {0, 4, 2, 2}},
        Empty{{2, 0, 4}, {2, 4, 5}, {2, 0, 5}}, Empty{{2, 3, 4}, {1, 4, 0}, {2, 3, 0}}}) {
    StatusOr<Tensor> z =
        runner.RunOne("BatchMatMulV2", {RandomTensor<float>(e.x, 1), RandomTensor<float>(e.y, 2)});
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_EQ(z->shape(), e.out) << e.x << " x " << e.y;
  }
  // K = 0: every product is all zeros.
  for (bool adj_x : {false, true}) {
    StatusOr<Tensor> zeros = runner.RunOne(
        "BatchMatMulV2",
        {Tensor(DataType::kDouble, adj_x ? TensorShape({2, 0, 1}) : TensorShape({2, 1, 0})),
         Tensor(DataType::kDouble, TensorShape({0, 3}))},
        Adjoints(adj_x, false));
    ASSERT_TRUE(zeros.ok()) << zeros.status();
    EXPECT_TENSOR_EQ(*zeros,
                     Tensor::FromVector<double>({0, 0, 0, 0, 0, 0}, TensorShape({2, 1, 3})));
  }
}

// Each error through the shape function (RunOne) and through the kernel's own checks.
TEST(BatchMatMulOpTest, BadShapesReturnAnErrorNamingBothShapes) {
  struct Bad {
    TensorShape x, y;
    bool adj_y;
    std::string message;
  };
  const Bad cases[] = {
      {{2, 3, 4},
       {2, 5, 6},
       false,
       "inner dimensions must be equal, but are 4 and 5 for [2,3,4] x [2,5,6]"},
      {{2, 3, 4},
       {2, 6, 5},
       true,
       "inner dimensions must be equal, but are 4 and 5 for [2,3,4] x [2,6,5] (adj_x=0, adj_y=1)"},
      {{2, 3, 4},
       {3, 4, 5},
       false,
       "batch dimensions of [2,3,4] and [3,4,5] cannot be broadcast together"},
      {{4, 1, 3, 4},
       {2, 3, 4, 5},
       false,
       "batch dimensions of [4,1,3,4] and [2,3,4,5] cannot be broadcast together"},
  };
  KernelRunner runner;
  for (const Bad& bad : cases) {
    std::vector<Tensor> inputs = {RandomTensor<float>(bad.x, 1), RandomTensor<float>(bad.y, 2)};
    StatusOr<Tensor> inferred = runner.RunOne("BatchMatMulV2", inputs, Adjoints(false, bad.adj_y));
    ASSERT_FALSE(inferred.ok()) << bad.message;
    EXPECT_TRUE(IsInvalidArgument(inferred.status())) << inferred.status();
    EXPECT_NE(inferred.status().message().find(bad.message), std::string::npos)
        << inferred.status();
    StatusOr<std::vector<Tensor>> kernel = testing::RunKernelOnly(
        "BatchMatMulV2", inputs,
        {{"T", MakeAttrValue(DataType::kFloat)}, {"adj_y", MakeAttrValue(bad.adj_y)}});
    ASSERT_FALSE(kernel.ok()) << bad.message;
    EXPECT_TRUE(IsInvalidArgument(kernel.status())) << kernel.status();
    EXPECT_EQ(kernel.status().message(), "node 'k' (BatchMatMulV2): " + bad.message);
  }
  // Rank 1 on either side.
  for (auto [x, y] : {std::pair<TensorShape, TensorShape>{{3}, {3, 4}}, {{2, 3}, {3}}}) {
    std::vector<Tensor> inputs = {RandomTensor<float>(x, 1), RandomTensor<float>(y, 2)};
    StatusOr<Tensor> inferred = runner.RunOne("BatchMatMulV2", inputs);
    ASSERT_FALSE(inferred.ok());
    EXPECT_TRUE(IsInvalidArgument(inferred.status())) << inferred.status();
    StatusOr<std::vector<Tensor>> kernel =
        testing::RunKernelOnly("BatchMatMulV2", inputs, {{"T", MakeAttrValue(DataType::kFloat)}});
    ASSERT_FALSE(kernel.ok());
    EXPECT_EQ(kernel.status().message(),
              StrCat("node 'k' (BatchMatMulV2): inputs must have rank at least 2, but are ", x,
                     " and ", y));
  }
  EXPECT_FALSE(runner
                   .RunOne("BatchMatMulV2", {Tensor::FromVector<uint8_t>({1}, TensorShape({1, 1})),
                                             Tensor::FromVector<uint8_t>({1}, TensorShape({1, 1}))})
                   .ok());
}

}  // namespace
}  // namespace weft::kernels
