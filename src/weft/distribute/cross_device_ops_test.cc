// CrossDeviceOps: ReductionToOneDevice builds graphs whose results, run in a DirectSession with one
// CPU device per replica, equal the plain sum or mean; both implementations broadcast and refuse
// bad arguments by name. AllReduceCrossDeviceOps has its own test file.
#include "weft/distribute/cross_device_ops.h"

#include <gtest/gtest.h>

#include "weft/distribute/all_reduce_cross_device_ops.h"
#include "weft/distribute/testing/cross_device_ops_test_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::distribute {
namespace {

using testing::CheckReduce;
using testing::CountOps;
using testing::CpuDevice;
using testing::CpuDevices;
using testing::Expected;
using testing::MakePerReplica;

TEST(ReductionToOneDeviceTest, SumsAndAveragesOnTwoAndFourDevices) {
  for (int n : {2, 4}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
      ReductionToOneDevice cross_device_ops;
      CheckReduce(cross_device_ops, n, op);
    }
  }
}

TEST(ReductionToOneDeviceTest, ReducesOnTheFirstDestinationAndCopiesToEach) {
  Scope root = Scope::NewRootScope();
  PerReplica value = MakePerReplica(root, 2, TensorShape({3}));
  ReductionToOneDevice cross_device_ops;
  auto reduced = cross_device_ops.Reduce(root, ReduceOp::kSum, value, {CpuDevice(1)});
  ASSERT_TRUE(reduced.ok()) << reduced.status();
  ASSERT_EQ(reduced->num_replicas(), 1);
  EXPECT_EQ(reduced->device(0), CpuDevice(1));
  EXPECT_EQ(CountOps(root, "AddN"), 1);
  auto session = testing::MakeSession(root, 2);
  ASSERT_NE(session, nullptr);
  EXPECT_TENSOR_NEAR(testing::Fetch(*session, reduced->values())[0],
                     Expected(2, TensorShape({3}), ReduceOp::kSum));
}

TEST(ReductionToOneDeviceTest, OneValueOnItsOwnDeviceIsAnIdentity) {
  Scope root = Scope::NewRootScope();
  PerReplica value = MakePerReplica(root, 1, TensorShape({2}));
  ReductionToOneDevice cross_device_ops;
  auto reduced = cross_device_ops.Reduce(root, ReduceOp::kMean, value, {"/cpu:0"});
  ASSERT_TRUE(reduced.ok()) << reduced.status();
  EXPECT_EQ(reduced->primary().node()->type_string(), "Identity");
  EXPECT_EQ(CountOps(root, "AddN"), 0);
}

TEST(ReductionToOneDeviceTest, IntegersSumAndMeanTruncates) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithDevice(CpuDevice(0)), {1, 2});
  auto b = ops::Const(root.WithDevice(CpuDevice(1)), {2, 5});
  ReductionToOneDevice cross_device_ops;
  auto sum = cross_device_ops.Reduce(root, ReduceOp::kSum, PerReplica({a, b}), CpuDevices(2));
  auto mean = cross_device_ops.Reduce(root, ReduceOp::kMean, PerReplica({a, b}), CpuDevices(2));
  ASSERT_TRUE(sum.ok() && mean.ok());
  auto session = testing::MakeSession(root, 2);
  ASSERT_NE(session, nullptr);
  auto results = testing::Fetch(*session, {sum->value(1), mean->value(1)});
  EXPECT_TENSOR_EQ(results[0], Tensor::FromVector<int32_t>({3, 7}));
  EXPECT_TENSOR_EQ(results[1], Tensor::FromVector<int32_t>({1, 3}));
}

TEST(CrossDeviceOpsTest, BroadcastPutsACopyOnEachDevice) {
  for (int which = 0; which < 2; ++which) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Const(root.WithDevice(CpuDevice(0)), {1.0f, 2.0f});
    ReductionToOneDevice to_one;
    AllReduceCrossDeviceOps all_reduce;
    CrossDeviceOps& ops = which == 0 ? static_cast<CrossDeviceOps&>(to_one) : all_reduce;
    auto copies = ops.Broadcast(root, x, CpuDevices(3));
    ASSERT_TRUE(copies.ok()) << copies.status();
    ASSERT_EQ(copies->num_replicas(), 3);
    EXPECT_EQ(copies->device(2), CpuDevice(2));
    auto session = testing::MakeSession(root, 3);
    ASSERT_NE(session, nullptr);
    for (const Tensor& t : testing::Fetch(*session, copies->values())) {
      EXPECT_TENSOR_EQ(t, Tensor::FromVector<float>({1.0f, 2.0f}));
    }
  }
}

TEST(CrossDeviceOpsTest, BadArgumentsAreRefusedByName) {
  Scope root = Scope::NewRootScope();
  PerReplica two = MakePerReplica(root, 2, TensorShape({3}));
  PerReplica four = MakePerReplica(root, 4, TensorShape({3}));
  PerReplica holed({two.value(0), Output()}, CpuDevices(2));
  ReductionToOneDevice to_one;
  AllReduceCrossDeviceOps all_reduce;
  for (CrossDeviceOps* ops : std::vector<CrossDeviceOps*>{&to_one, &all_reduce}) {
    auto s = ops->Reduce(root, ReduceOp::kSum, two, {}).status();
    EXPECT_TRUE(IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find("destinations must not be empty"), std::string::npos) << s;
    s = ops->BatchReduce(root, ReduceOp::kSum, {two, four}, CpuDevices(2)).status();
    EXPECT_TRUE(IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find("value 1 has 4 replicas but value 0 has 2"), std::string::npos) << s;
    s = ops->Reduce(root, ReduceOp::kSum, holed, CpuDevices(2)).status();
    EXPECT_TRUE(IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find("replica 1"), std::string::npos) << s;
    s = ops->Broadcast(root, Output(), CpuDevices(2)).status();
    EXPECT_TRUE(IsInvalidArgument(s)) << s;
    s = ops->Broadcast(root, two.value(0), {}).status();
    EXPECT_TRUE(IsInvalidArgument(s)) << s;
  }
  // Refusals leave the scope usable.
  EXPECT_TRUE(root.ok()) << root.status();
}

}  // namespace
}  // namespace weft::distribute
