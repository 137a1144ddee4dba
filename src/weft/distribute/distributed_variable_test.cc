// Distributed variables in cross-replica context: creation (names, devices, kinds, refusals),
// initial values identical on every device, and the cross-replica rows of the aggregation tables,
// checked by running the graph in a DirectSession with one CPU device per component.
#include "weft/distribute/distributed_variable.h"

#include <cstring>

#include <gtest/gtest.h>

#include "weft/distribute/mirrored_variable.h"
#include "weft/distribute/sync_on_read_variable.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::distribute {
namespace {

using testing::CpuDevice;
using testing::CpuDevices;

std::shared_ptr<DistributedVariable> MakeVariable(
    const Scope& root, int n, VariableSynchronization sync, VariableAggregation aggregation,
    const Initializer& initializer = Initializer::Constant(1), DataType dtype = DataType::kFloat) {
  auto variable = CreateDistributedVariable(root, "v", TensorShape({2}), dtype, initializer,
                                            CpuDevices(n), sync, aggregation);
  EXPECT_TRUE(variable.ok()) << variable.status();
  return variable.ok() ? *variable : nullptr;
}

// The value of every component after running `targets` in their own step (after initializing).
std::vector<Tensor> ComponentsAfter(const Scope& root, const DistributedVariable& variable,
                                    const std::vector<Output>& targets,
                                    std::vector<Output> extra_fetches = {},
                                    std::vector<Tensor>* extra = nullptr) {
  std::vector<Output> reads;
  for (const Variable& component : variable.components()) reads.push_back(component.Read(root));
  auto session = testing::MakeSession(root, variable.num_components());
  if (session == nullptr) return {};
  testing::RunTargets(*session, {variable.initializer()});
  if (!targets.empty()) testing::RunTargets(*session, targets);
  if (extra != nullptr) *extra = testing::Fetch(*session, extra_fetches);
  return testing::Fetch(*session, reads);
}

Tensor Vec(float a, float b) { return Tensor::FromVector<float>({a, b}); }

TEST(DistributedVariableTest, ComponentsAreNamedAndPlacedPerDevice) {
  Scope root = Scope::NewRootScope();
  auto v = MakeVariable(root.NewSubScope("dense"), 3, VariableSynchronization::kAuto,
                        VariableAggregation::kSum);
  ASSERT_NE(v, nullptr);
  ASSERT_EQ(v->num_components(), 3);
  EXPECT_EQ(v->name(), "dense/v");
  EXPECT_EQ(v->component(0).name(), "dense/v");
  EXPECT_EQ(v->component(1).name(), "dense/v/replica_1");
  EXPECT_EQ(v->component(2).name(), "dense/v/replica_2");
  EXPECT_EQ(v->component(2).handle().node()->requested_device(), CpuDevice(2));
  EXPECT_EQ(v->synchronization(), VariableSynchronization::kOnWrite);
  EXPECT_NE(dynamic_cast<MirroredVariable*>(v.get()), nullptr);
  auto on_read = MakeVariable(root, 2, VariableSynchronization::kOnRead, VariableAggregation::kSum);
  ASSERT_NE(on_read, nullptr);
  EXPECT_NE(dynamic_cast<SyncOnReadVariable*>(on_read.get()), nullptr);
  EXPECT_EQ(on_read->name(), "v");
}

TEST(DistributedVariableTest, RandomInitialValuesAreBitwiseIdenticalOnEveryDevice) {
  for (int n : {2, 4}) {
    Scope root = Scope::NewRootScope();
    auto v = MakeVariable(root, n, VariableSynchronization::kOnWrite, VariableAggregation::kMean,
                          Initializer::RandomNormal(0, 1, /*seed=*/0));
    ASSERT_NE(v, nullptr);
    std::vector<Tensor> values = ComponentsAfter(root, *v, {});
    ASSERT_EQ(values.size(), static_cast<size_t>(n));
    EXPECT_NE(values[0].data<float>()[0], values[0].data<float>()[1]);
    for (int i = 1; i < n; ++i) {
      ASSERT_EQ(values[i].TotalBytes(), values[0].TotalBytes());
      EXPECT_EQ(std::memcmp(values[i].raw_data(), values[0].raw_data(), values[0].TotalBytes()), 0)
          << "component " << i;
    }
  }
}

TEST(DistributedVariableTest, CreationRefusesBadRequests) {
  Scope root = Scope::NewRootScope();
  auto s = CreateDistributedVariable(root, "count", TensorShape({}), DataType::kInt32,
                                     Initializer::Zeros(), CpuDevices(2),
                                     VariableSynchronization::kOnWrite, VariableAggregation::kMean)
               .status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("'count'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("MEAN"), std::string::npos) << s;
  s = CreateDistributedVariable(root, "v", TensorShape({}), DataType::kFloat, Initializer::Zeros(),
                                {}, VariableSynchronization::kOnWrite, VariableAggregation::kSum)
          .status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_TRUE(root.ok());
}

TEST(MirroredVariableTest, CrossReplicaUpdatesReachEveryComponent) {
  for (VariableAggregation aggregation :
       {VariableAggregation::kNone, VariableAggregation::kSum, VariableAggregation::kMean,
        VariableAggregation::kOnlyFirstReplica}) {
    Scope root = Scope::NewRootScope();
    auto v = MakeVariable(root, 2, VariableSynchronization::kOnWrite, aggregation);
    ASSERT_NE(v, nullptr);
    auto assign = v->Assign(root, Vec(5, 6), nullptr);
    ASSERT_TRUE(assign.ok()) << assign.status();
    auto add = v->AssignAdd(root.WithControlDependencies({*assign}), Vec(1, 1), nullptr);
    ASSERT_TRUE(add.ok()) << add.status();
    auto sub = v->AssignSub(root.WithControlDependencies({*add}), Vec(0.5f, 0.5f), nullptr);
    ASSERT_TRUE(sub.ok()) << sub.status();
    auto read = v->Read(root, nullptr);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->node()->type_string(), "Identity");
    std::vector<Tensor> read_value;
    std::vector<Tensor> values = ComponentsAfter(root, *v, {*sub}, {*read}, &read_value);
    ASSERT_EQ(values.size(), 2u);
    for (const Tensor& value : values) EXPECT_TENSOR_EQ(value, Vec(5.5f, 6.5f));
    EXPECT_TENSOR_EQ(read_value[0], Vec(5.5f, 6.5f));
  }
}

TEST(SyncOnReadVariableTest, CrossReplicaAssignWithSumSplitsTheValue) {
  Scope root = Scope::NewRootScope();
  auto v = MakeVariable(root, 2, VariableSynchronization::kOnRead, VariableAggregation::kSum);
  ASSERT_NE(v, nullptr);
  auto assign = v->Assign(root, Vec(10, 3), nullptr);
  ASSERT_TRUE(assign.ok()) << assign.status();
  auto read = v->Read(root, nullptr);
  ASSERT_TRUE(read.ok()) << read.status();
  std::vector<Tensor> read_value;
  std::vector<Tensor> values = ComponentsAfter(root, *v, {*assign}, {*read}, &read_value);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_TENSOR_EQ(values[0], Vec(5, 1.5f));
  EXPECT_TENSOR_EQ(values[1], Vec(5, 1.5f));
  EXPECT_TENSOR_EQ(read_value[0], Vec(10, 3));
}

TEST(SyncOnReadVariableTest, CrossReplicaAssignAddWithSumIsRefused) {
  Scope root = Scope::NewRootScope();
  auto v = MakeVariable(root, 2, VariableSynchronization::kOnRead, VariableAggregation::kSum);
  ASSERT_NE(v, nullptr);
  for (UpdateKind kind : {UpdateKind::kAssignAdd, UpdateKind::kAssignSub}) {
    Status s = v->Update(root, kind, Vec(1, 1), nullptr).status();
    EXPECT_TRUE(IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find("SyncOnReadVariable 'v'"), std::string::npos) << s;
    EXPECT_NE(s.message().find(UpdateKindName(kind)), std::string::npos) << s;
    EXPECT_NE(s.message().find("SUM"), std::string::npos) << s;
  }
  EXPECT_TRUE(root.ok());
}

TEST(SyncOnReadVariableTest, CrossReplicaUpdatesAndReadsByAggregation) {
  struct Case {
    VariableAggregation aggregation;
    Tensor expected_read;
  };
  // Components become {4, 5} (assign 3, then +1) on both, then component 1 gets +10 directly.
  for (const Case& c : {Case{VariableAggregation::kMean, Vec(9, 10)},
                        Case{VariableAggregation::kOnlyFirstReplica, Vec(4, 5)}}) {
    Scope root = Scope::NewRootScope();
    auto v = MakeVariable(root, 2, VariableSynchronization::kOnRead, c.aggregation);
    ASSERT_NE(v, nullptr);
    auto assign = v->Assign(root, Vec(3, 4), nullptr);
    ASSERT_TRUE(assign.ok()) << assign.status();
    auto add = v->AssignAdd(root.WithControlDependencies({*assign}), Vec(1, 1), nullptr);
    ASSERT_TRUE(add.ok()) << add.status();
    Output bump = v->component(1).AssignAdd(root.WithControlDependencies({*add}), Vec(10, 10));
    auto read = v->Read(root, nullptr);
    ASSERT_TRUE(read.ok()) << read.status();
    std::vector<Tensor> read_value;
    std::vector<Tensor> values = ComponentsAfter(root, *v, {bump}, {*read}, &read_value);
    ASSERT_EQ(values.size(), 2u);
    EXPECT_TENSOR_EQ(values[0], Vec(4, 5));
    EXPECT_TENSOR_EQ(values[1], Vec(14, 15));
    EXPECT_TENSOR_EQ(read_value[0], c.expected_read);
  }
}

TEST(SyncOnReadVariableTest, CrossReplicaReadWithNoneIsRefused) {
  Scope root = Scope::NewRootScope();
  auto v = MakeVariable(root, 2, VariableSynchronization::kOnRead, VariableAggregation::kNone);
  ASSERT_NE(v, nullptr);
  Status s = v->Read(root, nullptr).status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("SyncOnReadVariable 'v'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("NONE"), std::string::npos) << s;
  // One component needs no combining.
  auto single = CreateDistributedVariable(
      root, "w", TensorShape({}), DataType::kFloat, Initializer::Zeros(), CpuDevices(1),
      VariableSynchronization::kOnRead, VariableAggregation::kNone);
  ASSERT_TRUE(single.ok());
  EXPECT_TRUE((*single)->Read(root, nullptr).ok());
}

TEST(SyncOnReadVariableTest, IntegerSumAssignTruncatesTheShares) {
  Scope root = Scope::NewRootScope();
  auto v = MakeVariable(root, 2, VariableSynchronization::kOnRead, VariableAggregation::kSum,
                        Initializer::Zeros(), DataType::kInt64);
  ASSERT_NE(v, nullptr);
  auto assign = v->Assign(root, Tensor::FromVector<int64_t>({8, 7}), nullptr);
  ASSERT_TRUE(assign.ok()) << assign.status();
  std::vector<Tensor> values = ComponentsAfter(root, *v, {*assign});
  ASSERT_EQ(values.size(), 2u);
  EXPECT_TENSOR_EQ(values[1], Tensor::FromVector<int64_t>({4, 3}));
}

}  // namespace
}  // namespace weft::distribute
