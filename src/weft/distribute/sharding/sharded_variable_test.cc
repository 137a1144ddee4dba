#include "weft/distribute/sharding/sharded_variable.h"

#include <gtest/gtest.h>

#include "weft/distribute/testing/session_test_util.h"
#include "weft/testing/tensor_matchers.h"
#include "weft/train/optimizer.h"

namespace weft::distribute {
namespace {

using testing::CpuDevices;
using testing::Fetch;
using testing::MakeSession;

TEST(PartitionerTest, ShardCountsFollowTheReferencesRules) {
  const TensorShape big({2'000'000, 16}), small({1000, 16}), tiny({2, 16});
  EXPECT_EQ(Partitioner::FixedShards(3).NumShards(small, DataType::kFloat), 3);
  EXPECT_EQ(Partitioner::FixedShards(3).NumShards(tiny, DataType::kFloat), 2);  // 2 rows
  // The reference's default (max_shards 1) does not shard at all.
  EXPECT_EQ(Partitioner::MinSize().NumShards(big, DataType::kFloat), 1);
  EXPECT_EQ(Partitioner::MinSize(256 << 10, 4).NumShards(big, DataType::kFloat), 4);
  EXPECT_EQ(Partitioner::MinSize(256 << 10, 4).NumShards(small, DataType::kFloat), 1);
  // 128,000,000 bytes in at most 10 MB shards: 13.
  EXPECT_EQ(Partitioner::MaxSize(10'000'000).NumShards(big, DataType::kFloat), 13);
  EXPECT_EQ(Partitioner::MaxSize(10'000'000, 4).NumShards(big, DataType::kFloat), 4);
  EXPECT_EQ(Partitioner::AcrossAll(3).NumShards(big, DataType::kFloat), 3);
  EXPECT_EQ(Partitioner::AcrossAll(3).NumShards(small, DataType::kFloat), 1);  // 64 KB
  EXPECT_EQ(Partitioner::AcrossAll(3).NumShards(TensorShape(), DataType::kFloat), 1);
  EXPECT_EQ(ShardRows(10, 3), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(ShardRows(2, 2), (std::vector<int64_t>{1, 1}));
}

Tensor Table() {
  std::vector<double> values(10 * 2);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  return Tensor::FromVector(values, TensorShape({10, 2}));
}

// A [10, 2] table of 0..19, in 3 shards on 3 CPU devices, initialized from Table().
ShardedVariable MakeTable(const Scope& root) {
  ShardedVariable table =
      ShardedVariable::Create(root, "emb", TensorShape({10, 2}), DataType::kDouble,
                              Initializer::Zeros(), Partitioner::FixedShards(3), CpuDevices(3));
  return table;
}

std::vector<Output> AssignTable(const Scope& root, const ShardedVariable& table) {
  std::vector<Output> assigns;
  const Tensor whole = Table();
  for (size_t s = 0; s < table.shards().size(); ++s) {
    const int64_t begin = table.offsets()[s], rows = table.shards()[s].shape().dim_size(0);
    std::vector<double> part(whole.data<double>() + begin * 2,
                             whole.data<double>() + (begin + rows) * 2);
    assigns.push_back(table.shards()[s].Assign(
        root, ops::Const(root, Tensor::FromVector(part, TensorShape({rows, 2})))));
  }
  return assigns;
}

TEST(ShardedVariableTest, ShardsAreNamedPlacedAndSizedAsTheReferenceDoes) {
  Scope root = Scope::NewRootScope();
  ShardedVariable table = MakeTable(root);
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(table.shards().size(), 3u);
  EXPECT_EQ(table.offsets(), (std::vector<int64_t>{0, 4, 7}));
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(table.shards()[s].name(), "emb/part_" + std::to_string(s));
    EXPECT_EQ(table.shards()[s].handle().node()->requested_device(), CpuDevices(3)[s]);
  }
  EXPECT_EQ(table.shards()[0].shape(), TensorShape({4, 2}));
}

TEST(ShardedVariableTest, LookupMatchesAGatherFromTheWholeTableForEitherIdType) {
  for (DataType id_type : {DataType::kInt32, DataType::kInt64}) {
    Scope root = Scope::NewRootScope();
    ShardedVariable table = MakeTable(root);
    Tensor ids = Tensor::FromVector<int64_t>({9, 0, 4, 3, 7, 4}, TensorShape({2, 3}));
    Output id_input = ops::Cast(root, ops::Const(root, ids), id_type);
    Output looked_up = table.Lookup(root, id_input);
    Output gathered = ops::GatherV2(root, table.Read(root), id_input, 0);
    std::vector<Output> assigns = AssignTable(root, table);
    ASSERT_TRUE(root.ok()) << root.status();
    auto session = MakeSession(root, 3);
    ASSERT_NE(session, nullptr);
    Fetch(*session, {}, table.initializers());
    Fetch(*session, {}, assigns);
    std::vector<Tensor> values = Fetch(*session, {looked_up, gathered});
    ASSERT_EQ(values.size(), 2u);
    EXPECT_EQ(values[0].shape(), TensorShape({2, 3, 2}));
    EXPECT_TENSOR_NEAR(values[0], values[1], 0, 0);
    EXPECT_EQ(values[0].data<double>()[0], 18.0);  // row 9, from the last shard
  }
}

TEST(ShardedVariableTest, TrainingThroughLookupsUpdatesEachShardSparselyLikeOneTable) {
  auto train = [](bool sharded) {
    Scope root = Scope::NewRootScope();
    ShardedVariable table = MakeTable(root);
    Variable whole = Variable::Create(root, "whole", TensorShape({10, 2}), DataType::kDouble,
                                      Initializer::Zeros());
    Output ids = ops::Const(root, Tensor::FromVector<int64_t>({9, 0, 4, 3, 4}));
    Output rows =
        sharded ? table.Lookup(root, ids) : ops::ResourceGather(root, whole.handle(), ids);
    Output loss = ops::Sum(root, ops::Square(root, ops::Sub(root, rows, 1.0)), {0, 1});
    auto optimizer = train::NewAdagradOptimizer(0.1);
    std::vector<Variable> variables = sharded ? table.shards() : std::vector<Variable>{whole};
    auto gradients = optimizer->ComputeGradients(root, loss, variables);
    EXPECT_TRUE(gradients.ok()) << gradients.status();
    for (const train::GradientAndVariable& pair : *gradients) {
      EXPECT_TRUE(pair.indices) << pair.variable.name() << " got a dense gradient";
    }
    auto train_op = optimizer->ApplyGradients(root, *gradients);
    EXPECT_TRUE(train_op.ok()) << train_op.status();
    std::vector<Output> inits = table.initializers();
    inits.push_back(whole.initializer());
    inits.insert(inits.end(), optimizer->initializers().begin(), optimizer->initializers().end());
    std::vector<Output> assigns = AssignTable(root, table);
    assigns.push_back(whole.Assign(root, ops::Const(root, Table())));
    Output read = sharded ? table.Read(root) : whole.Read(root);
    auto session = MakeSession(root, 3);
    if (session == nullptr) return Tensor();
    Fetch(*session, {}, inits);
    Fetch(*session, {}, assigns);
    for (int step = 0; step < 3; ++step) Fetch(*session, {}, {*train_op});
    return Fetch(*session, {read})[0];
  };
  Tensor sharded = train(true), whole = train(false);
  EXPECT_TENSOR_NEAR(sharded, whole, 1e-12, 0);
  EXPECT_NE(sharded.data<double>()[0], 0.0);  // row 0 was trained (from 0.0)
  EXPECT_EQ(sharded.data<double>()[2], 2.0);  // row 1 was never looked up
}

// Two tables of 3 shards on 3 devices looked up together: the same rows as each table's own
// Lookup, and training through them equals training whole tables, with every shard's sparse
// gradient (rows and ids) made on the shard's own device, so nothing but one tensor of rows
// gradients per device goes back to the tables.
TEST(ShardedVariableTest, LookupManyMatchesEachTablesLookupAndKeepsGradientsWithTheShards) {
  auto train = [](bool together) {
    Scope root = Scope::NewRootScope();
    ShardedVariable first = MakeTable(root);
    ShardedVariable second = ShardedVariable::Create(root, "emb2", TensorShape({10, 2}),
                                                     DataType::kDouble, Initializer::Constant(0.5),
                                                     Partitioner::FixedShards(3), CpuDevices(3));
    Output ids_a = ops::Const(root, Tensor::FromVector<int64_t>({9, 0, 4, 3, 4}));
    Output ids_b = ops::Const(root, Tensor::FromVector<int64_t>({1, 1, 8}, TensorShape({3, 1})));
    std::vector<Output> rows =
        together ? ShardedVariable::LookupMany(root, {first, second}, {ids_a, ids_b})
                 : std::vector<Output>{first.Lookup(root, ids_a), second.Lookup(root, ids_b)};
    EXPECT_EQ(rows.size(), 2u);
    Output loss =
        ops::Add(root, ops::Sum(root, ops::Square(root, ops::Sub(root, rows[0], 1.0)), {0, 1}),
                 ops::Sum(root, ops::Square(root, ops::Sub(root, rows[1], 2.0)), {0, 1, 2}));
    auto optimizer = train::NewAdagradOptimizer(0.1);
    std::vector<Variable> variables = first.shards();
    variables.insert(variables.end(), second.shards().begin(), second.shards().end());
    auto gradients = optimizer->ComputeGradients(root, loss, variables);
    EXPECT_TRUE(gradients.ok()) << gradients.status();
    for (const train::GradientAndVariable& pair : *gradients) {
      EXPECT_TRUE(pair.indices) << pair.variable.name() << " got a dense gradient";
      if (!together || !pair.indices) continue;
      const std::string& device = pair.variable.handle().node()->requested_device();
      EXPECT_EQ(pair.gradient.node()->requested_device(), device) << pair.variable.name();
      EXPECT_EQ(pair.indices.node()->requested_device(), device) << pair.variable.name();
    }
    auto train_op = optimizer->ApplyGradients(root, *gradients);
    EXPECT_TRUE(train_op.ok()) << train_op.status();
    std::vector<Output> inits = first.initializers();
    for (const Output& init : second.initializers()) inits.push_back(init);
    for (const Output& init : optimizer->initializers()) inits.push_back(init);
    std::vector<Output> assigns = AssignTable(root, first);
    std::vector<Output> reads = {first.Read(root), second.Read(root)};
    auto session = MakeSession(root, 3);
    if (session == nullptr) return std::vector<Tensor>();
    Fetch(*session, {}, inits);
    Fetch(*session, {}, assigns);
    std::vector<Tensor> looked_up = Fetch(*session, {rows[0], rows[1]});
    for (int step = 0; step < 3; ++step) Fetch(*session, {}, {*train_op});
    std::vector<Tensor> trained = Fetch(*session, reads);
    looked_up.insert(looked_up.end(), trained.begin(), trained.end());
    return looked_up;
  };
  std::vector<Tensor> together = train(true), apart = train(false);
  ASSERT_EQ(together.size(), 4u);
  ASSERT_EQ(apart.size(), 4u);
  EXPECT_EQ(together[1].shape(), TensorShape({3, 1, 2}));
  for (size_t i = 0; i < 4; ++i) EXPECT_TENSOR_NEAR(together[i], apart[i], 1e-12, 0) << i;
  EXPECT_EQ(together[0].data<double>()[0], 18.0);  // row 9 of the first table
}

TEST(ShardedVariableTest, AnIdOutsideTheTableFailsTheStepNamingTheShard) {
  Scope root = Scope::NewRootScope();
  ShardedVariable table = MakeTable(root);
  Output looked_up = table.Lookup(root, ops::Const(root, Tensor::FromVector<int64_t>({2, 12})));
  auto session = MakeSession(root, 3);
  ASSERT_NE(session, nullptr);
  Fetch(*session, {}, table.initializers());
  std::vector<Tensor> outputs;
  Status status = session->Run({}, {looked_up.name()}, {}, &outputs);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("is outside variable 'emb/part_2' of 3 rows"), std::string::npos)
      << status;
}

TEST(ShardedVariableTest, AScalarCannotBeSharded) {
  Scope root = Scope::NewRootScope();
  ShardedVariable table =
      ShardedVariable::Create(root, "s", TensorShape(), DataType::kFloat, Initializer::Zeros(),
                              Partitioner::FixedShards(2), {});
  EXPECT_FALSE(table);
  EXPECT_NE(root.status().message().find("'s': a scalar cannot be cut"), std::string::npos);
}

}  // namespace
}  // namespace weft::distribute
