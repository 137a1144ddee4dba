// DistributedValues: construction, device lookup and the checks that Validate makes.
#include "weft/distribute/values.h"

#include <gtest/gtest.h>

#include "weft/graph/builder/ops.h"

namespace weft::distribute {
namespace {

TEST(ValuesTest, DevicesComeFromTheNodesWhenNotGiven) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithDevice("/device:CPU:0"), 1.0f);
  auto b = ops::Const(root.WithDevice("/device:CPU:1"), 2.0f);
  PerReplica value({a, b});
  ASSERT_EQ(value.num_replicas(), 2);
  EXPECT_EQ(value.device(1), "/device:CPU:1");
  EXPECT_EQ(value.primary().node(), a.node());
  EXPECT_EQ(value.dtype(), DataType::kFloat);
  EXPECT_TRUE(value.Validate("v").ok());
}

TEST(ValuesTest, ValidateNamesWhatIsWrong) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, 1.0f);
  auto i = ops::Const(root, 1);
  Status s = PerReplica().Validate("Reduce: value");
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_NE(s.message().find("Reduce: value has no components"), std::string::npos) << s;
  s = PerReplica({a, Output()}, {"/cpu:0", "/cpu:1"}).Validate("v");
  EXPECT_NE(s.message().find("replica 1"), std::string::npos) << s;
  EXPECT_NE(s.message().find("empty"), std::string::npos) << s;
  s = PerReplica({a, a}, {"/cpu:0"}).Validate("v");
  EXPECT_NE(s.message().find("2 components but 1 devices"), std::string::npos) << s;
  s = Mirrored({a, i}, {"/cpu:0", "/cpu:1"}).Validate("v");
  EXPECT_NE(s.message().find("int32"), std::string::npos) << s;
}

TEST(ValuesTest, DeviceSpellingsCompareCanonically) {
  EXPECT_EQ(CanonicalDevice("/cpu:1"), CanonicalDevice("/device:CPU:1"));
  EXPECT_TRUE(SameDevices({"/cpu:0", "/device:cpu:1"}, {"/device:CPU:0", "/CPU:1"}));
  EXPECT_FALSE(SameDevices({"/cpu:0", "/cpu:1"}, {"/cpu:1", "/cpu:0"}));
  EXPECT_FALSE(SameDevices({"/cpu:0"}, {"/cpu:0", "/cpu:1"}));
}

}  // namespace
}  // namespace weft::distribute
