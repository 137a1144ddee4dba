// Tests for the SelectV2 kernel: hand values, a three-way broadcasting reference loop for every
// dtype (flat, scalar-condition, row and general paths, sizes that run on the thread pool), the
// zero-copy pass-through of a scalar condition, and shapes that cannot be broadcast.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::BroadcastFlatIndex;
using testing::RandomTensor;
using testing::Unravel;
using weft::testing::KernelRunner;

// out[i] = c[..] ? t[..] : e[..] over the NumPy broadcast of the three shapes (assumed valid).
template <typename T>
Tensor ReferenceSelect(const Tensor& c, const Tensor& t, const Tensor& e) {
  const std::vector<std::vector<int64_t>> dims = {c.shape().dim_sizes(), t.shape().dim_sizes(),
                                                  e.shape().dim_sizes()};
  size_t rank = 0;
  for (const auto& d : dims) rank = std::max(rank, d.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& d : dims) {
    for (size_t i = 0; i < d.size(); ++i) {
      if (d[i] != 1) out[rank - d.size() + i] = d[i];
    }
  }
  Tensor z(DataTypeToEnum<T>::value, TensorShape(out));
  for (int64_t i = 0; i < z.NumElements(); ++i) {
    const std::vector<int64_t> index = Unravel(i, out);
    const bool pick_t = c.data<bool>()[BroadcastFlatIndex(index, dims[0])];
    z.data<T>()[i] = pick_t ? t.data<T>()[BroadcastFlatIndex(index, dims[1])]
                            : e.data<T>()[BroadcastFlatIndex(index, dims[2])];
  }
  return z;
}

TEST(SelectV2OpTest, HandValues) {
  KernelRunner runner;
  StatusOr<Tensor> z = runner.RunOne(
      "SelectV2", {Tensor::FromVector<bool>({true, false, true}),
                   Tensor::FromVector<float>({1, 2, 3}), Tensor::FromVector<float>({-1, -2, -3})});
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_TENSOR_EQ(*z, Tensor::FromVector<float>({1, -2, 3}));
  // A [2,1] condition picks rows; e is a scalar.
  StatusOr<Tensor> rows = runner.RunOne(
      "SelectV2", {Tensor::FromVector<bool>({false, true}, TensorShape({2, 1})),
                   Tensor::FromVector<int32_t>({1, 2, 3}), Tensor::Scalar<int32_t>(0)});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_TENSOR_EQ(*rows, Tensor::FromVector<int32_t>({0, 0, 0, 1, 2, 3}, TensorShape({2, 3})));
}

template <typename T>
void CheckAgainstReference(KernelRunner& runner, const TensorShape& cs, const TensorShape& ts,
                           const TensorShape& es, uint32_t seed) {
  Tensor c = RandomTensor<bool>(cs, seed);
  Tensor t = RandomTensor<T>(ts, seed + 1);
  Tensor e = RandomTensor<T>(es, seed + 2);
  StatusOr<Tensor> z = runner.RunOne("SelectV2", {c, t, e});
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_TENSOR_EQ(*z, ReferenceSelect<T>(c, t, e))
      << DataTypeName(t.dtype()) << " " << cs << " " << ts << " " << es;
}

TEST(SelectV2OpTest, MatchesReferenceLoop) {
  KernelRunner runner;
  struct Shapes {
    TensorShape c, t, e;
  };
  const std::vector<Shapes> cases = {
      {{2, 3}, {2, 3}, {2, 3}},
      {{}, {2, 3}, {2, 3}},
      {{2, 1}, {2, 3}, {3}},
      {{3}, {2, 1}, {}},
      {{4, 1, 3}, {5, 1}, {1}},
      {{0, 3}, {3}, {1, 3}},
      {{1}, {1}, {1}},
      {{}, {}, {}},
      {{2, 1, 4}, {1, 3, 1}, {2, 3, 4}},
      {{300, 200}, {300, 200}, {200}},
      {{300, 1}, {1, 200}, {}},
      {{6, 1, 1, 2, 1}, {1, 5, 4, 1, 3}, {3}},
  };
  uint32_t seed = 10;
  for (const Shapes& s : cases) {
    CheckAgainstReference<float>(runner, s.c, s.t, s.e, seed += 3);
    CheckAgainstReference<double>(runner, s.c, s.t, s.e, seed += 3);
    CheckAgainstReference<int32_t>(runner, s.c, s.t, s.e, seed += 3);
    CheckAgainstReference<int64_t>(runner, s.c, s.t, s.e, seed += 3);
    CheckAgainstReference<bool>(runner, s.c, s.t, s.e, seed += 3);
  }
}

TEST(SelectV2OpTest, ScalarConditionPassesTheChosenInputThrough) {
  KernelRunner runner;
  Tensor t = RandomTensor<float>(TensorShape({4, 5}), 1);
  Tensor e = RandomTensor<float>(TensorShape({4, 5}), 2);
  for (bool pick_t : {true, false}) {
    StatusOr<Tensor> z = runner.RunOne("SelectV2", {Tensor::Scalar<bool>(pick_t), t, e});
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_TRUE(z->SharesBufferWith(pick_t ? t : e));
  }
  // The chosen input is broadcast: a new buffer of the output's shape.
  StatusOr<Tensor> z =
      runner.RunOne("SelectV2", {Tensor::Scalar<bool>(true), Tensor::Scalar<float>(7), e});
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_TENSOR_EQ(*z,
                   ReferenceSelect<float>(Tensor::Scalar<bool>(true), Tensor::Scalar<float>(7), e));
}

TEST(SelectV2OpTest, ShapesThatCannotBroadcastAreErrors) {
  KernelRunner runner;
  Tensor c = Tensor::FromVector<bool>({true, false});
  Tensor t = Tensor::FromVector<float>({1, 2, 3});
  StatusOr<Tensor> z = runner.RunOne("SelectV2", {c, t, t});
  ASSERT_FALSE(z.ok());
  EXPECT_TRUE(IsInvalidArgument(z.status())) << z.status();
  EXPECT_NE(z.status().message().find("condition [2], t [3] and e [3] cannot be broadcast"),
            std::string::npos)
      << z.status();
  // The kernel's own check, without the shape function.
  StatusOr<std::vector<Tensor>> k =
      testing::RunKernelOnly("SelectV2", {c, t, Tensor::FromVector<float>({1, 2})},
                             {{"T", MakeAttrValue(DataType::kFloat)}});
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().message(),
            "node 'k' (SelectV2): condition [2], t [3] and e [2] cannot be broadcast together");
  // The condition must be bool.
  EXPECT_FALSE(runner.RunOne("SelectV2", {Tensor::FromVector<float>({1}), t, t}).ok());
}

}  // namespace
}  // namespace weft::kernels
