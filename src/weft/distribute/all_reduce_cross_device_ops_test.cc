// AllReduceCrossDeviceOps: results equal the plain sum or mean on 2 and 4 devices, the packer
// makes the expected buckets and collectives, and unsuitable values fall back to one device.
#include "weft/distribute/all_reduce_cross_device_ops.h"

#include <gtest/gtest.h>

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

TEST(AllReduceCrossDeviceOpsTest, SumsAndAveragesOnTwoAndFourDevices) {
  for (int n : {2, 4}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
      AllReduceCrossDeviceOps cross_device_ops;
      CheckReduce(cross_device_ops, n, op);
    }
  }
}

TEST(AllReduceCrossDeviceOpsTest, BatchReduceMatchesThePlainSumOfEachValue) {
  for (int n : {2, 4}) {
    Scope root = Scope::NewRootScope();
    const std::vector<TensorShape> shapes = {TensorShape({4}), TensorShape({2, 2}), TensorShape({}),
                                             TensorShape({3, 1})};
    std::vector<PerReplica> values;
    for (size_t i = 0; i < shapes.size(); ++i) {
      values.push_back(MakePerReplica(root, n, shapes[i], 100.0f * i));
    }
    AllReduceCrossDeviceOps cross_device_ops(AllReduceOptions{.bytes_per_pack = 16});
    auto reduced = cross_device_ops.BatchReduce(root, ReduceOp::kMean, values, CpuDevices(n));
    ASSERT_TRUE(reduced.ok()) << reduced.status();
    ASSERT_EQ(reduced->size(), shapes.size());
    auto session = testing::MakeSession(root, n);
    ASSERT_NE(session, nullptr);
    std::vector<Output> fetches;
    for (const Mirrored& m : *reduced) {
      fetches.insert(fetches.end(), m.values().begin(), m.values().end());
    }
    for (int step = 0; step < 2; ++step) {
      std::vector<Tensor> results = testing::Fetch(*session, fetches);
      ASSERT_EQ(results.size(), shapes.size() * n);
      for (size_t i = 0; i < shapes.size(); ++i) {
        for (int r = 0; r < n; ++r) {
          EXPECT_TENSOR_NEAR(results[i * n + r],
                             Expected(n, shapes[i], ReduceOp::kMean, 100.0f * i));
        }
      }
    }
  }
}

TEST(AllReduceCrossDeviceOpsTest, PacksReversedValuesIntoBucketsOfBytesPerPack) {
  const std::vector<DataType> f4(4, DataType::kFloat);
  // 16, 16, 32, 8 bytes; buckets of at most 32 bytes, filled from the last value.
  std::vector<PartialShape> shapes = {PartialShape({4}), PartialShape({4}), PartialShape({8}),
                                      PartialShape({2})};
  EXPECT_EQ(PackIntoBuckets(f4, shapes, 32), (std::vector<std::vector<int>>{{3}, {2}, {1, 0}}));
  EXPECT_EQ(PackIntoBuckets(f4, shapes, 40), (std::vector<std::vector<int>>{{3, 2}, {1, 0}}));
  EXPECT_EQ(PackIntoBuckets(f4, shapes, 0), (std::vector<std::vector<int>>{{3, 2, 1, 0}}));
  EXPECT_EQ(PackIntoBuckets(f4, shapes, 1), (std::vector<std::vector<int>>{{3}, {2}, {1}, {0}}));
  // An unknown shape goes alone; dtypes never share a bucket.
  shapes[1] = PartialShape({-1});
  EXPECT_EQ(PackIntoBuckets(f4, shapes, 1024), (std::vector<std::vector<int>>{{1}, {3, 2, 0}}));
  EXPECT_EQ(PackIntoBuckets({DataType::kFloat, DataType::kDouble, DataType::kFloat},
                            {PartialShape({1}), PartialShape({1}), PartialShape({1})}, 1024),
            (std::vector<std::vector<int>>{{2, 0}, {1}}));
}

TEST(AllReduceCrossDeviceOpsTest, OneCollectivePerReplicaPerBucketWithSharedKeys) {
  Scope root = Scope::NewRootScope();
  std::vector<PerReplica> values;
  for (int i = 0; i < 5; ++i) values.push_back(MakePerReplica(root, 2, TensorShape({256})));
  // 1 KB each; 2 KB buckets -> 3 buckets -> 6 collectives.
  AllReduceCrossDeviceOps cross_device_ops(
      AllReduceOptions{.bytes_per_pack = 2048, .group_key = 9});
  auto reduced = cross_device_ops.BatchReduce(root, ReduceOp::kSum, values, CpuDevices(2));
  ASSERT_TRUE(reduced.ok()) << reduced.status();
  EXPECT_EQ(CountOps(root, "CollectiveAllReduce"), 6);
  // Replicas of one value share an instance key; buckets differ.
  auto key = [](const Output& output) {
    return output.node()->def().attr().at("instance_key").i();
  };
  EXPECT_EQ(key((*reduced)[0].value(0)), key((*reduced)[0].value(1)));
  EXPECT_NE(key((*reduced)[0].value(0)), key((*reduced)[4].value(0)));
  EXPECT_EQ((*reduced)[4].value(0).node()->def().attr().at("group_key").i(), 9);
  EXPECT_EQ((*reduced)[4].value(0).node()->def().attr().at("group_size").i(), 2);
  // The default 4 MB pack takes all five in one bucket.
  Scope other = Scope::NewRootScope();
  std::vector<PerReplica> more;
  for (int i = 0; i < 5; ++i) more.push_back(MakePerReplica(other, 2, TensorShape({256})));
  AllReduceCrossDeviceOps defaults;
  ASSERT_TRUE(defaults.BatchReduce(other, ReduceOp::kSum, more, CpuDevices(2)).ok());
  EXPECT_EQ(CountOps(other, "CollectiveAllReduce"), 2);
}

// communication_dtype bfloat16: float32 values travel as bfloat16 (half the bytes, so twice as
// many fit a bucket) and come back as float32, equal to the plain mean within bfloat16's rounding.
TEST(AllReduceCrossDeviceOpsTest, BFloat16CommunicationHalvesTheBytesAndRoundsTheMean) {
  Scope root = Scope::NewRootScope();
  std::vector<PerReplica> values;
  for (int i = 0; i < 5; ++i) {
    values.push_back(MakePerReplica(root, 2, TensorShape({256}), 10.0f * i));
  }
  AllReduceCrossDeviceOps cross_device_ops(
      AllReduceOptions{.bytes_per_pack = 1024, .communication_dtype = DataType::kBFloat16});
  auto reduced = cross_device_ops.BatchReduce(root, ReduceOp::kMean, values, CpuDevices(2));
  ASSERT_TRUE(reduced.ok()) << reduced.status();
  // 512 bytes each in bfloat16: two per 1 KB bucket, three buckets (five in float32).
  EXPECT_EQ(CountOps(root, "CollectiveAllReduce"), 6);
  for (const Mirrored& m : *reduced) {
    EXPECT_EQ(m.value(0).dtype(), DataType::kFloat);
    EXPECT_EQ(m.value(0).node()->type_string(), "Cast");
  }
  auto session = testing::MakeSession(root, 2);
  ASSERT_NE(session, nullptr);
  std::vector<Output> fetches;
  for (const Mirrored& m : *reduced) {
    fetches.insert(fetches.end(), m.values().begin(), m.values().end());
  }
  std::vector<Tensor> results = testing::Fetch(*session, fetches);
  ASSERT_EQ(results.size(), 10u);
  for (int i = 0; i < 5; ++i) {
    const Tensor want = Expected(2, TensorShape({256}), ReduceOp::kMean, 10.0f * i);
    // bfloat16 keeps 8 significant bits: each input and the sum round by at most 2^-9.
    EXPECT_TENSOR_NEAR(results[2 * i], want, 0, 3.0 / 512);
    EXPECT_TENSOR_EQ(results[2 * i + 1], results[2 * i]);
  }
}

TEST(AllReduceCrossDeviceOpsTest, FallsBackWhenDestinationsDifferOrTheDtypeIsInteger) {
  Scope root = Scope::NewRootScope();
  PerReplica value = MakePerReplica(root, 2, TensorShape({3}));
  auto a = ops::Const(root.WithDevice(CpuDevice(0)), {1, 2});
  auto b = ops::Const(root.WithDevice(CpuDevice(1)), {3, 4});
  AllReduceCrossDeviceOps cross_device_ops;
  auto to_one = cross_device_ops.Reduce(root, ReduceOp::kSum, value, {CpuDevice(1)});
  auto swapped =
      cross_device_ops.Reduce(root, ReduceOp::kMean, value, {CpuDevice(1), CpuDevice(0)});
  auto ints = cross_device_ops.Reduce(root, ReduceOp::kSum, PerReplica({a, b}), CpuDevices(2));
  ASSERT_TRUE(to_one.ok() && swapped.ok() && ints.ok());
  EXPECT_EQ(CountOps(root, "CollectiveAllReduce"), 0);
  EXPECT_EQ(CountOps(root, "AddN"), 3);
  auto session = testing::MakeSession(root, 2);
  ASSERT_NE(session, nullptr);
  auto results = testing::Fetch(
      *session, {to_one->value(0), swapped->value(0), swapped->value(1), ints->value(0)});
  EXPECT_TENSOR_NEAR(results[0], Expected(2, TensorShape({3}), ReduceOp::kSum));
  EXPECT_TENSOR_NEAR(results[1], Expected(2, TensorShape({3}), ReduceOp::kMean));
  EXPECT_TENSOR_NEAR(results[2], Expected(2, TensorShape({3}), ReduceOp::kMean));
  EXPECT_TENSOR_EQ(results[3], Tensor::FromVector<int32_t>({4, 6}));
}

}  // namespace
}  // namespace weft::distribute
