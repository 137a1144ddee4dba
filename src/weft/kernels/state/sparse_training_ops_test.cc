#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "weft/kernels/testing/state_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::state {
namespace {

using testing::Contains;
using testing::MakeVariable;
using testing::MustRead;

using weft::testing::KernelRunner;

// A [rows, width] float64 table with distinct values.
Tensor Table(int64_t rows, int64_t width) {
  Tensor t(DataType::kDouble, TensorShape({rows, width}));
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<double>()[i] = 0.01 * (i % 97) - 0.3;
  return t;
}

// The dense gradient of `table`'s shape that the sparse (grad, indices) stands for.
Tensor Densify(const Tensor& table, const Tensor& grad, const std::vector<int64_t>& indices) {
  Tensor dense(table.dtype(), table.shape());
  const int64_t width = table.dim_size(1);
  for (int64_t i = 0; i < dense.NumElements(); ++i) dense.data<double>()[i] = 0;
  for (size_t k = 0; k < indices.size(); ++k) {
    for (int64_t j = 0; j < width; ++j) {
      dense.data<double>()[indices[k] * width + j] += grad.data<double>()[k * width + j];
    }
  }
  return dense;
}

Tensor Rows(const std::vector<std::vector<double>>& rows) {
  Tensor t(DataType::kDouble,
           TensorShape({static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())}));
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < rows[i].size(); ++j)
      t.data<double>()[i * rows[i].size() + j] = rows[i][j];
  }
  return t;
}

TEST(SparseApplyGradientDescentTest, SumsRepeatedRowsAndLeavesTheOthersAsTheyWere) {
  for (DataType index_type : {DataType::kInt32, DataType::kInt64}) {
    KernelRunner runner;
    Tensor table = Table(5, 2);
    Tensor var = MakeVariable(runner, "emb", table);
    Tensor grad = Rows({{1, 2}, {3, 4}, {5, 6}});
    std::vector<int64_t> ids = {3, 0, 3};
    Tensor indices = index_type == DataType::kInt32
                         ? Tensor::FromVector(std::vector<int32_t>{3, 0, 3})
                         : Tensor::FromVector(ids);
    Status status =
        runner.Run("ResourceSparseApplyGradientDescent", {var, Tensor::Scalar(0.5), grad, indices})
            .status();
    ASSERT_TRUE(status.ok()) << status;

    KernelRunner dense_runner;
    Tensor dense_var = MakeVariable(dense_runner, "emb", table);
    ASSERT_TRUE(dense_runner
                    .Run("ResourceApplyGradientDescent",
                         {dense_var, Tensor::Scalar(0.5), Densify(table, grad, ids)})
                    .ok());
    EXPECT_TENSOR_NEAR(MustRead(runner, var, DataType::kDouble),
                       MustRead(dense_runner, dense_var, DataType::kDouble), 1e-12, 0);
  }
}

TEST(ApplyAdagradTest, ThreeStepsFloat64) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "w", Tensor::FromVector(std::vector<double>{1, -0.5}));
  Tensor accum = MakeVariable(runner, "w/accum", Tensor::FromVector(std::vector<double>{0.1, 0.1}));
  const std::vector<std::vector<double>> grads = {{1, 0.5}, {2, -1}, {-1, 0.25}};
  double w0 = 1, a0 = 0.1;
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(
        runner
            .Run("ResourceApplyAdagradV2", {var, accum, Tensor::Scalar(0.1), Tensor::Scalar(1e-7),
                                            Tensor::FromVector(grads[step])})
            .ok());
    a0 += grads[step][0] * grads[step][0];
    w0 -= 0.1 * grads[step][0] / (std::sqrt(a0) + 1e-7);
  }
  EXPECT_NEAR(MustRead(runner, var, DataType::kDouble).data<double>()[0], w0, 1e-12);
  EXPECT_NEAR(MustRead(runner, accum, DataType::kDouble).data<double>()[0], 6.1, 1e-12);
}

// Runs the sparse op on (var, slots) and the dense op on copies with the densified gradient; the
// rows named must match the dense result, and the others keep their starting values.
void ExpectSparseMatchesDenseOnTouchedRows(const std::string& sparse_op,
                                           const std::string& dense_op, int num_slots,
                                           const std::vector<Tensor>& scalars,
                                           const std::vector<int64_t>& ids) {
  const int64_t rows = 64, width = 3;
  Tensor table = Table(rows, width);
  Tensor slot_start = Table(rows, width);
  for (int64_t i = 0; i < slot_start.NumElements(); ++i) {
    slot_start.data<double>()[i] = std::abs(slot_start.data<double>()[i]) + 0.1;
  }
  std::mt19937_64 random(7);
  std::normal_distribution<double> normal;
  Tensor grad(DataType::kDouble, TensorShape({static_cast<int64_t>(ids.size()), width}));
  for (int64_t i = 0; i < grad.NumElements(); ++i) grad.data<double>()[i] = normal(random);

  KernelRunner sparse, dense;
  std::vector<Tensor> sparse_inputs = {MakeVariable(sparse, "emb", table)};
  std::vector<Tensor> dense_inputs = {MakeVariable(dense, "emb", table)};
  for (int s = 0; s < num_slots; ++s) {
    sparse_inputs.push_back(MakeVariable(sparse, "emb/slot" + std::to_string(s), slot_start));
    dense_inputs.push_back(MakeVariable(dense, "emb/slot" + std::to_string(s), slot_start));
  }
  for (const Tensor& scalar : scalars) {
    sparse_inputs.push_back(scalar);
    dense_inputs.push_back(scalar);
  }
  sparse_inputs.push_back(grad);
  sparse_inputs.push_back(Tensor::FromVector(ids));
  dense_inputs.push_back(Densify(table, grad, ids));
  Status status = sparse.Run(sparse_op, sparse_inputs).status();
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_TRUE(dense.Run(dense_op, dense_inputs).ok());

  for (int v = 0; v <= num_slots; ++v) {
    Tensor got = MustRead(sparse, sparse_inputs[v], DataType::kDouble);
    Tensor want = MustRead(dense, dense_inputs[v], DataType::kDouble);
    const Tensor& start = v == 0 ? table : slot_start;
    for (int64_t r = 0; r < rows; ++r) {
      const bool touched = std::find(ids.begin(), ids.end(), r) != ids.end();
      for (int64_t j = 0; j < width; ++j) {
        const int64_t k = r * width + j;
        const double expected = touched ? want.data<double>()[k] : start.data<double>()[k];
        EXPECT_NEAR(got.data<double>()[k], expected, 1e-12)
            << sparse_op << " variable " << v << " row " << r << " column " << j;
      }
    }
  }
}

TEST(SparseApplyAdagradTest, TouchedRowsMatchDenseAdagradOthersUnchanged) {
  ExpectSparseMatchesDenseOnTouchedRows("ResourceSparseApplyAdagradV2", "ResourceApplyAdagradV2", 1,
                                        {Tensor::Scalar(0.05), Tensor::Scalar(1e-7)},
                                        {5, 60, 5, 0, 33});
}

TEST(SparseApplyAdamTest, IsLazyTouchedRowsMatchDenseAdamOthersKeepTheirMoments) {
  ExpectSparseMatchesDenseOnTouchedRows(
      "ResourceSparseApplyAdam", "ResourceApplyAdam", 2,
      {Tensor::Scalar(0.9), Tensor::Scalar(0.999), Tensor::Scalar(0.01), Tensor::Scalar(0.9),
       Tensor::Scalar(0.999), Tensor::Scalar(1e-8)},
      {63, 1, 2, 1});
}

// Enough rows to take the sharded path (rows * width >= 32 Ki elements), with many repeats.
TEST(SparseApplyAdagradTest, LargeUpdateWithRepeatsMatchesDenseOnTheSameRows) {
  const int64_t rows = 8192, width = 16;
  std::mt19937_64 random(11);
  std::uniform_int_distribution<int64_t> row(0, 999);
  std::vector<int64_t> ids(4096);
  for (int64_t& id : ids) id = row(random);
  Tensor table = Table(rows, width);
  Tensor grad(DataType::kDouble, TensorShape({4096, width}));
  for (int64_t i = 0; i < grad.NumElements(); ++i)
    grad.data<double>()[i] = 0.001 * (i % 13) - 0.006;
  Tensor accum_start(DataType::kDouble, table.shape());
  for (int64_t i = 0; i < accum_start.NumElements(); ++i) accum_start.data<double>()[i] = 0.1;

  KernelRunner sparse, dense;
  Tensor sparse_var = MakeVariable(sparse, "emb", table);
  Tensor sparse_accum = MakeVariable(sparse, "emb/accum", accum_start);
  Tensor dense_var = MakeVariable(dense, "emb", table);
  Tensor dense_accum = MakeVariable(dense, "emb/accum", accum_start);
  ASSERT_TRUE(sparse
                  .Run("ResourceSparseApplyAdagradV2",
                       {sparse_var, sparse_accum, Tensor::Scalar(0.05), Tensor::Scalar(1e-7), grad,
                        Tensor::FromVector(ids)})
                  .ok());
  // Rows never named have a zero dense gradient, which Adagrad leaves unchanged as well.
  ASSERT_TRUE(dense
                  .Run("ResourceApplyAdagradV2", {dense_var, dense_accum, Tensor::Scalar(0.05),
                                                  Tensor::Scalar(1e-7), Densify(table, grad, ids)})
                  .ok());
  EXPECT_TENSOR_NEAR(MustRead(sparse, sparse_var, DataType::kDouble),
                     MustRead(dense, dense_var, DataType::kDouble), 1e-12, 0);
  EXPECT_TENSOR_NEAR(MustRead(sparse, sparse_accum, DataType::kDouble),
                     MustRead(dense, dense_accum, DataType::kDouble), 1e-12, 0);
}

Status RunSgd(const Tensor& table, const Tensor& grad, const Tensor& indices) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "emb", table);
  return runner.Run("ResourceSparseApplyGradientDescent", {var, Tensor::Scalar(0.5), grad, indices})
      .status();
}

TEST(SparseApplyTest, AnIndexOutsideTheVariableNamesTheIndexItsPositionAndTheVariable) {
  Status status =
      RunSgd(Table(4, 2), Rows({{1, 1}, {2, 2}}), Tensor::FromVector(std::vector<int64_t>{1, 4}));
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_TRUE(Contains(status, "index 4 at position 1 is outside variable 'emb' of 4 rows"))
      << status;
  status = RunSgd(Table(4, 2), Rows({{1, 1}}), Tensor::FromVector(std::vector<int32_t>{-1}));
  EXPECT_TRUE(Contains(status, "index -1 at position 0")) << status;
}

TEST(SparseApplyTest, BadShapesAreErrorsNamingTheVariable) {
  Status status =
      RunSgd(Table(4, 2), Rows({{1, 1}, {2, 2}}), Tensor::FromVector(std::vector<int64_t>{1}));
  EXPECT_TRUE(Contains(status, "grad's rows and indices must be equal, but are 2 and 1")) << status;
  status = RunSgd(Table(4, 2), Rows({{1, 1, 1}}), Tensor::FromVector(std::vector<int64_t>{1}));
  EXPECT_TRUE(Contains(status, "does not match the rows of variable 'emb' of shape [4,2]"))
      << status;
  Tensor matrix_ids(DataType::kInt64, TensorShape({1, 1}));
  matrix_ids.data<int64_t>()[0] = 0;
  status = RunSgd(Table(4, 2), Rows({{1, 1}}), matrix_ids);
  EXPECT_TRUE(Contains(status, "indices must be a vector")) << status;
  status = RunSgd(Tensor::Scalar(1.0), Rows({{1}}), Tensor::FromVector(std::vector<int64_t>{0}));
  EXPECT_TRUE(Contains(status, "cannot take a sparse update")) << status;
}

TEST(SparseApplyTest, AnUninitializedSlotIsNamed) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "emb", Table(4, 2));
  Tensor accum = testing::MakeHandle(runner, "emb/accum", DataType::kDouble);
  Status status = runner
                      .Run("ResourceSparseApplyAdagradV2",
                           {var, accum, Tensor::Scalar(0.1), Tensor::Scalar(1e-7), Rows({{1, 1}}),
                            Tensor::FromVector(std::vector<int64_t>{2})})
                      .status();
  EXPECT_TRUE(Contains(status, "accum variable 'emb/accum' is not initialized")) << status;
}

TEST(ResourceGatherTest, CopiesTheRowsNamedInTheIndicesShape) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "emb", Table(6, 2));
  Tensor ids(DataType::kInt32, TensorShape({2, 2}));
  const int32_t values[] = {5, 0, 5, 2};
  std::copy(values, values + 4, ids.data<int32_t>());
  StatusOr<Tensor> rows =
      runner.RunOne("ResourceGather", {var, ids}, {{"dtype", MakeAttrValue(DataType::kDouble)}});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->shape(), TensorShape({2, 2, 2}));
  const Tensor table = Table(6, 2);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(rows->data<double>()[i * 2 + j], table.data<double>()[values[i] * 2 + j]);
    }
  }
  // A copy, not a view: a sparse update afterwards leaves the gathered rows as they were.
  ASSERT_TRUE(
      runner
          .Run("ResourceSparseApplyGradientDescent", {var, Tensor::Scalar(1.0), Rows({{1, 1}}),
                                                      Tensor::FromVector(std::vector<int64_t>{5})})
          .ok());
  EXPECT_EQ(rows->data<double>()[0], table.data<double>()[10]);
}

// Enough ids for the lookahead that asks for rows ahead of the copy, over rows wider than a cache
// line, in a scattered order with repeats.
TEST(ResourceGatherTest, ManyScatteredIdsOfWideRowsMatchTheTable) {
  KernelRunner runner;
  const Tensor table = Table(1000, 20);
  Tensor var = MakeVariable(runner, "wide", table);
  std::vector<int64_t> ids(300);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919) % 1000);
  ids[100] = ids[50];
  StatusOr<Tensor> rows = runner.RunOne("ResourceGather", {var, Tensor::FromVector(ids)},
                                        {{"dtype", MakeAttrValue(DataType::kDouble)}});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->shape(), TensorShape({300, 20}));
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int j = 0; j < 20; ++j) {
      ASSERT_EQ(rows->data<double>()[i * 20 + j], table.data<double>()[ids[i] * 20 + j])
          << "id " << ids[i] << " at " << i;
    }
  }
}

// An id out of range far into a long list, after one the lookahead met earlier.
TEST(ResourceGatherTest, AnIdOutsideTheTableFarIntoTheIdsIsNamedAtItsPosition) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "item_embedding", Table(50, 4));
  std::vector<int64_t> ids(64, 3);
  ids[40] = -2;
  StatusOr<Tensor> rows = runner.RunOne("ResourceGather", {var, Tensor::FromVector(ids)},
                                        {{"dtype", MakeAttrValue(DataType::kDouble)}});
  ASSERT_FALSE(rows.ok());
  EXPECT_TRUE(
      Contains(rows.status(), "index -2 at position 40 is outside variable 'item_embedding' of 50"))
      << rows.status();
}

TEST(ResourceGatherTest, AnIdOutsideTheTableNamesTheIdAndTheVariable) {
  KernelRunner runner;
  Tensor var = MakeVariable(runner, "user_embedding", Table(6, 2));
  StatusOr<Tensor> rows =
      runner.RunOne("ResourceGather", {var, Tensor::FromVector(std::vector<int64_t>{1, 6})},
                    {{"dtype", MakeAttrValue(DataType::kDouble)}});
  ASSERT_FALSE(rows.ok());
  EXPECT_TRUE(
      Contains(rows.status(), "index 6 at position 1 is outside variable 'user_embedding' of 6"))
      << rows.status();
}

}  // namespace
}  // namespace weft::kernels::state
