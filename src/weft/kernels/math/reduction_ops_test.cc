// Tests for the Sum, Mean and Max kernels: hand values, axis forms (negative, scalar, vector,
// repeated, empty), keep_dims, empty inputs, integer Mean, a reference loop over random shapes and
// axis sets (every collapse pattern), and the error paths.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "weft/kernels/testing/math_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using testing::RandomTensor;
using weft::testing::KernelRunner;

std::map<std::string, proto::AttrValue> KeepDims(bool keep) {
  return {{"keep_dims", MakeAttrValue(keep)}};
}

Tensor Axes(std::vector<int32_t> axes) { return Tensor::FromVector<int32_t>(axes); }

TEST(ReductionOpsTest, HandValues) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  StatusOr<Tensor> rows = runner.RunOne("Sum", {x, Tensor::Scalar<int32_t>(1)});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_TENSOR_EQ(*rows, Tensor::FromVector<float>({6, 15}));
  StatusOr<Tensor> cols = runner.RunOne("Sum", {x, Tensor::Scalar<int64_t>(-2)});
  ASSERT_TRUE(cols.ok()) << cols.status();
  EXPECT_TENSOR_EQ(*cols, Tensor::FromVector<float>({5, 7, 9}));
  StatusOr<Tensor> all = runner.RunOne("Mean", {x, Axes({0, 1})}, KeepDims(true));
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TENSOR_EQ(*all, Tensor::FromVector<float>({3.5f}, TensorShape({1, 1})));
  StatusOr<Tensor> max = runner.RunOne("Max", {x, Axes({1})}, KeepDims(true));
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_TENSOR_EQ(*max, Tensor::FromVector<float>({3, 6}, TensorShape({2, 1})));
}

TEST(ReductionOpsTest, RepeatedAxesCountOnce) {
  KernelRunner runner;
  Tensor x = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  StatusOr<Tensor> s = runner.RunOne("Sum", {x, Axes({1, -1, 1})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TENSOR_EQ(*s, Tensor::FromVector<int32_t>({6, 15}));
}

TEST(ReductionOpsTest, EmptyAxesReturnTheInputUnchanged) {
  KernelRunner runner;
  Tensor x = RandomTensor<double>(TensorShape({2, 3}), 1);
  for (const char* op : {"Sum", "Mean", "Max"}) {
    StatusOr<Tensor> y = runner.RunOne(op, {x, Axes({})}, KeepDims(false));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TENSOR_EQ(*y, x);
    EXPECT_TRUE(y->SharesBufferWith(x));
  }
  // Reducing only size-1 axes moves no data either.
  StatusOr<Tensor> y = runner.RunOne("Sum", {x.Reshaped(TensorShape({2, 1, 3})), Axes({1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TENSOR_EQ(*y, x);
}

TEST(ReductionOpsTest, IntegerMeanTruncates) {
  KernelRunner runner;
  StatusOr<Tensor> m = runner.RunOne(
      "Mean", {Tensor::FromVector<int32_t>({1, 2, -1, -2}, TensorShape({2, 2})), Axes({1})});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TENSOR_EQ(*m, Tensor::FromVector<int32_t>({1, -1}));
}

TEST(ReductionOpsTest, EmptyReductionsGiveIdentityValues) {
  KernelRunner runner;
  Tensor f(DataType::kFloat, TensorShape({2, 0}));
  StatusOr<Tensor> sum = runner.RunOne("Sum", {f, Axes({1})});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_TENSOR_EQ(*sum, Tensor::FromVector<float>({0, 0}));
  const float inf = std::numeric_limits<float>::infinity();
  StatusOr<Tensor> max = runner.RunOne("Max", {f, Axes({1})});
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_TENSOR_EQ(*max, Tensor::FromVector<float>({-inf, -inf}));
  StatusOr<Tensor> mean = runner.RunOne("Mean", {f, Axes({1})});
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_TRUE(std::isnan(mean->data<float>()[0]));
  StatusOr<Tensor> imax =
      runner.RunOne("Max", {Tensor(DataType::kInt64, TensorShape({0})), Axes({0})});
  ASSERT_TRUE(imax.ok()) << imax.status();
  EXPECT_TENSOR_EQ(*imax, Tensor::Scalar<int64_t>(std::numeric_limits<int64_t>::lowest()));
  // Keeping the empty axis gives an empty output.
  StatusOr<Tensor> kept = runner.RunOne("Sum", {f, Axes({0})});
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->shape(), TensorShape({0}));
}

TEST(ReductionOpsTest, MaxPropagatesNan) {
  KernelRunner runner;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  StatusOr<Tensor> m = runner.RunOne("Max", {Tensor::FromVector<float>({1, nan, 3}), Axes({0})});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(std::isnan(*m->data<float>()));
}

// Reference: out[kept index] = reduce over every element whose kept coordinates match.
template <typename T>
Tensor ReferenceReduce(const std::string& op, const Tensor& x, const std::vector<bool>& reduced,
                       bool keep_dims) {
  const auto& dims = x.shape().dim_sizes();
  std::vector<int64_t> out_dims;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!reduced[i]) {
      out_dims.push_back(dims[i]);
    } else if (keep_dims) {
      out_dims.push_back(1);
    }
  }
  TensorShape out_shape(out_dims);
  std::vector<double> acc(out_shape.num_elements(),
                          op == "Max" ? -std::numeric_limits<double>::infinity() : 0.0);
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    std::vector<int64_t> index = testing::Unravel(i, dims);
    int64_t o = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!reduced[d]) o = o * dims[d] + index[d];
    }
    const double v = static_cast<double>(x.data<T>()[i]);
    acc[o] = op == "Max" ? std::max(acc[o], v) : acc[o] + v;
  }
  int64_t reduced_count = 1;
  for (size_t d = 0; d < dims.size(); ++d) reduced_count *= reduced[d] ? dims[d] : 1;
  Tensor out(x.dtype(), out_shape);
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    double v = acc[i];
    if (op == "Mean") v /= static_cast<double>(reduced_count);
    out.data<T>()[i] = static_cast<T>(std::is_integral_v<T> ? std::trunc(v) : v);
  }
  return out;
}

template <typename T>
void CheckRandomReductions(KernelRunner& runner, uint32_t seed, int cases) {
  std::mt19937 gen(seed);
  for (int c = 0; c < cases; ++c) {
    const int rank = static_cast<int>(gen() % 5);
    std::vector<int64_t> dims(rank);
    for (int64_t& d : dims) d = 1 + gen() % 4;
    Tensor x = RandomTensor<T>(TensorShape(dims), seed + c);
    std::vector<bool> reduced(rank, false);
    std::vector<int64_t> axes;
    for (int d = 0; d < rank; ++d) {
      if (gen() % 2 == 0) {
        reduced[d] = true;
        axes.push_back(gen() % 2 == 0 ? d : d - rank);  // sometimes negative
      }
    }
    const bool keep_dims = gen() % 2 == 0;
    for (const char* op : {"Sum", "Mean", "Max"}) {
      StatusOr<Tensor> y =
          runner.RunOne(op, {x, Tensor::FromVector<int64_t>(axes)}, KeepDims(keep_dims));
      ASSERT_TRUE(y.ok()) << y.status();
      Tensor expected = ReferenceReduce<T>(op, x, reduced, keep_dims);
      if constexpr (std::is_floating_point_v<T>) {
        EXPECT_TENSOR_NEAR(*y, expected, 1e-4, 1e-5) << op << " " << x.shape();
      } else {
        EXPECT_TENSOR_EQ(*y, expected) << op << " " << x.shape();
      }
    }
  }
}

TEST(ReductionOpsTest, MatchesReferenceLoopOnRandomShapesAndAxes) {
  KernelRunner runner;
  CheckRandomReductions<float>(runner, 1, 40);
  CheckRandomReductions<double>(runner, 2, 20);
  CheckRandomReductions<int32_t>(runner, 3, 30);
  CheckRandomReductions<int64_t>(runner, 4, 20);
}

TEST(ReductionOpsTest, LargeInputsMatchReference) {
  KernelRunner runner;
  Tensor x = RandomTensor<float>(TensorShape({64, 50, 30}), 9);
  for (const std::vector<bool>& reduced :
       {std::vector<bool>{false, false, true}, std::vector<bool>{true, false, false},
        std::vector<bool>{false, true, false}, std::vector<bool>{true, false, true},
        std::vector<bool>{true, true, true}}) {
    std::vector<int32_t> axes;
    for (int d = 0; d < 3; ++d) {
      if (reduced[d]) axes.push_back(d);
    }
    for (const char* op : {"Sum", "Max"}) {
      StatusOr<Tensor> y = runner.RunOne(op, {x, Axes(axes)});
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_TENSOR_NEAR(*y, ReferenceReduce<float>(op, x, reduced, false), 1e-2, 1e-4) << op;
    }
  }
}

TEST(ReductionOpsTest, OuterReductionsMatchReferenceOnEveryShardingPath) {
  KernelRunner runner;
  struct Case {
    TensorShape shape;
    std::vector<bool> reduced;
  };
  const Case cases[] = {
      {TensorShape({37, 5}), {true, false}},               // serial, narrow rows grouped
      {TensorShape({300, 3}), {true, false}},              // serial, grouped with leftover rows
      {TensorShape({256, 256}), {true, false}},            // tall columns, sharded over rows
      {TensorShape({20000, 4}), {true, false}},            // tall and narrow
      {TensorShape({3, 200, 700}), {false, true, false}},  // sharded over column blocks
      {TensorShape({2, 100, 3, 60}), {true, false, true, false}},
  };
  uint32_t seed = 50;
  for (const Case& c : cases) {
    Tensor x = RandomTensor<float>(c.shape, seed++);
    Tensor xi = RandomTensor<int32_t>(c.shape, seed++);
    std::vector<int32_t> axes;
    for (int d = 0; d < c.shape.dims(); ++d) {
      if (c.reduced[d]) axes.push_back(d);
    }
    for (const char* op : {"Sum", "Max", "Mean"}) {
      StatusOr<Tensor> y = runner.RunOne(op, {x, Axes(axes)});
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_TENSOR_NEAR(*y, ReferenceReduce<float>(op, x, c.reduced, false), 1e-2, 1e-4)
          << op << " " << c.shape;
      StatusOr<Tensor> yi = runner.RunOne(op, {xi, Axes(axes)});
      ASSERT_TRUE(yi.ok()) << yi.status();
      EXPECT_TENSOR_EQ(*yi, ReferenceReduce<int32_t>(op, xi, c.reduced, false))
          << op << " " << c.shape;
    }
  }
}

TEST(ReductionOpsTest, RejectsBadAxesNamingTheNode) {
  KernelRunner runner;
  Tensor x = RandomTensor<float>(TensorShape({2, 3}), 1);
  for (int32_t axis : {2, -3}) {
    StatusOr<Tensor> y = runner.RunOne("Sum", {x, Axes({axis})});
    ASSERT_FALSE(y.ok());
    EXPECT_TRUE(IsInvalidArgument(y.status()));
    EXPECT_NE(y.status().message().find("node 'test_Sum' (Sum): invalid reduction dimension"),
              std::string::npos)
        << y.status();
  }
  StatusOr<std::vector<Tensor>> k =
      testing::RunKernelOnly("Max", {x, Axes({5})}, {{"T", MakeAttrValue(DataType::kFloat)}});
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().message(),
            "node 'k' (Max): invalid reduction dimension 5 for input of rank 2 (shape [2,3])");
  StatusOr<std::vector<Tensor>> matrix_axes =
      testing::RunKernelOnly("Mean", {x, Tensor::FromVector<int32_t>({0, 1}, TensorShape({1, 2}))},
                             {{"T", MakeAttrValue(DataType::kFloat)}});
  ASSERT_FALSE(matrix_axes.ok());
  EXPECT_TRUE(IsInvalidArgument(matrix_axes.status()));
  EXPECT_FALSE(
      runner.RunOne("Mean", {x, Tensor::FromVector<int32_t>({0, 1}, TensorShape({1, 2}))}).ok());
  // A scalar has no axis 0.
  EXPECT_FALSE(runner.RunOne("Sum", {Tensor::Scalar<float>(1), Axes({0})}).ok());
  EXPECT_FALSE(runner.RunOne("Sum", {Tensor::FromVector<uint8_t>({1}), Axes({0})}).ok());
}

}  // namespace
}  // namespace weft::kernels
