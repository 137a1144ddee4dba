#include "weft/distribute/reduce_on_each_destination.h"

#include <gtest/gtest.h>

#include "weft/distribute/testing/cross_device_ops_test_util.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::distribute {
namespace {

using testing::CountOps;
using testing::CpuDevices;
using testing::MakePerReplica;

TEST(ReduceOnEachDestinationTest, SumsAndAveragesOnTwoAndFourDevices) {
  ReduceOnEachDestination cross_device_ops;
  for (int n : {1, 2, 4}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
      SCOPED_TRACE(StrCat(n, " devices, ", ReduceOpName(op)));
      testing::CheckReduce(cross_device_ops, n, op);
    }
  }
}

TEST(ReduceOnEachDestinationTest, EveryDestinationSumsItselfToTheSameBits) {
  Scope root = Scope::NewRootScope();
  // Values whose float sum depends on the order of the additions.
  std::vector<Output> components;
  for (int r = 0; r < 3; ++r) {
    components.push_back(ops::Const(
        root.WithDevice(testing::CpuDevice(r)),
        Tensor::FromVector<float>({1e8f * (r == 0 ? 1 : -1), 0.1f * r, 1.0f / (r + 3)})));
  }
  PerReplica value(components, CpuDevices(3));
  ReduceOnEachDestination cross_device_ops;
  auto reduced = cross_device_ops.Reduce(root, ReduceOp::kMean, value, CpuDevices(3));
  ASSERT_TRUE(reduced.ok()) << reduced.status();
  EXPECT_EQ(CountOps(root, "AddN"), 3);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(reduced->value(r).node()->requested_device(), testing::CpuDevice(r));
  }
  auto session = testing::MakeSession(root, 3);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> results = testing::Fetch(*session, reduced->values());
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TENSOR_EQ(results[1], results[0]);
  EXPECT_TENSOR_EQ(results[2], results[0]);
}

TEST(ReduceOnEachDestinationTest, BadArgumentsAreRefusedByName) {
  Scope root = Scope::NewRootScope();
  ReduceOnEachDestination cross_device_ops;
  PerReplica value = MakePerReplica(root, 2, TensorShape({2}));
  auto empty = cross_device_ops.Reduce(root, ReduceOp::kSum, value, {});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("destinations"), std::string::npos);
  PerReplica other = MakePerReplica(root, 3, TensorShape({2}));
  auto mismatched =
      cross_device_ops.BatchReduce(root, ReduceOp::kSum, {value, other}, CpuDevices(2));
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.status().message().find("value 1 has 3 replicas"), std::string::npos)
      << mismatched.status();
}

}  // namespace
}  // namespace weft::distribute
