#include "weft/distribute/packed_transfer.h"

#include <gtest/gtest.h>

#include "weft/distribute/testing/cross_device_ops_test_util.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/graph/builder/ops/array_ops.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::distribute {
namespace {

using testing::CountOps;
using testing::CpuDevice;

TEST(MoveTogetherTest, ValuesForAnotherDeviceCrossAsOneTensorPerDtypeAndKeepTheirShapes) {
  Scope root = Scope::NewRootScope();
  const Scope on_zero = root.WithDevice(CpuDevice(0));
  const std::vector<Tensor> expected = {
      Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})),
      Tensor::FromVector<float>({7, 8, 9, 10}, TensorShape({4})),
      Tensor::Scalar<float>(11),
      Tensor::FromVector<double>({12, 13}, TensorShape({2})),  // alone of its dtype
      Tensor::FromVector<float>({14}, TensorShape({1})),       // already where it goes
  };
  std::vector<Output> values;
  std::vector<TensorShape> shapes;
  for (size_t i = 0; i < expected.size(); ++i) {
    values.push_back(ops::Const(i == 4 ? root.WithDevice(CpuDevice(1)) : on_zero, expected[i]));
    shapes.push_back(expected[i].shape());
  }
  const std::vector<std::string> destinations(values.size(), CpuDevice(1));
  auto moved = MoveTogether(root, values, destinations, shapes);
  ASSERT_TRUE(moved.ok()) << moved.status();
  ASSERT_EQ(moved->size(), values.size());
  // The three float32 values are joined once on device 0; the others pass as they are.
  EXPECT_EQ(CountOps(root, "ConcatV2"), 1);
  EXPECT_EQ((*moved)[3].node(), values[3].node());
  EXPECT_EQ((*moved)[4].node(), values[4].node());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*moved)[i].node()->requested_device(), CpuDevice(1));
  }
  auto session = testing::MakeSession(root, 2);
  ASSERT_NE(session, nullptr);
  const std::vector<Tensor> results = testing::Fetch(*session, *moved);
  ASSERT_EQ(results.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TENSOR_EQ(results[i], expected[i]);
  }
}

TEST(MoveTogetherTest, ListsOfDifferentLengthsAreRefusedByName) {
  Scope root = Scope::NewRootScope();
  Output value = ops::Const(root.WithDevice(CpuDevice(0)), Tensor::Scalar<float>(1));
  auto refused = MoveTogether(root, {value, value}, {CpuDevice(1)}, {TensorShape(), TensorShape()});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("2 values, 1 destinations"), std::string::npos)
      << refused.status();
}

}  // namespace
}  // namespace weft::distribute
