// Tests for device spec parsing, printing, matching and merging.
#include "weft/framework/device_name_utils.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace weft {
namespace {

ParsedDeviceName Parse(std::string_view spec) {
  auto parsed = ParseDeviceName(spec);
  EXPECT_TRUE(parsed.ok()) << spec << ": " << parsed.status();
  return parsed.ok() ? *parsed : ParsedDeviceName();
}

TEST(DeviceNameUtilsTest, ParsesAFullName) {
  ParsedDeviceName p = Parse("/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_TRUE(p.has_job && p.has_replica && p.has_task && p.has_type && p.has_id);
  EXPECT_EQ(p.job, "localhost");
  EXPECT_EQ(p.replica, 0);
  EXPECT_EQ(p.task, 0);
  EXPECT_EQ(p.type, "CPU");
  EXPECT_EQ(p.id, 0);
  EXPECT_TRUE(IsFullySpecified(p));

  p = Parse("/job:worker_2/replica:3/task:17/device:GPU:12");
  EXPECT_EQ(p.job, "worker_2");
  EXPECT_EQ(p.replica, 3);
  EXPECT_EQ(p.task, 17);
  EXPECT_EQ(p.type, "GPU");
  EXPECT_EQ(p.id, 12);
}

TEST(DeviceNameUtilsTest, ParsesPartialNames) {
  ParsedDeviceName p = Parse("/device:CPU:1");
  EXPECT_FALSE(p.has_job || p.has_replica || p.has_task);
  EXPECT_TRUE(p.has_type && p.has_id);
  EXPECT_EQ(p.type, "CPU");
  EXPECT_EQ(p.id, 1);
  EXPECT_FALSE(IsFullySpecified(p));

  p = Parse("/job:worker/task:2");
  EXPECT_TRUE(p.has_job && p.has_task);
  EXPECT_FALSE(p.has_replica || p.has_type || p.has_id);
  EXPECT_EQ(p.job, "worker");
  EXPECT_EQ(p.task, 2);

  p = Parse("/replica:4");
  EXPECT_TRUE(p.has_replica);
  EXPECT_EQ(p.replica, 4);

  p = Parse("/device:GPU");  // a type without an id
  EXPECT_TRUE(p.has_type);
  EXPECT_FALSE(p.has_id);
  EXPECT_EQ(p.type, "GPU");

  // Components in another order.
  p = Parse("/device:CPU:3/task:1/job:ps");
  EXPECT_EQ(p.job, "ps");
  EXPECT_EQ(p.task, 1);
  EXPECT_EQ(p.id, 3);
}

TEST(DeviceNameUtilsTest, EmptyAndSlashMatchAnything) {
  for (std::string_view spec : {"", "/"}) {
    ParsedDeviceName p = Parse(spec);
    EXPECT_EQ(p, ParsedDeviceName()) << spec;
    EXPECT_TRUE(IsSpecification(p, Parse("/job:a/replica:0/task:0/device:CPU:0")));
  }
}

TEST(DeviceNameUtilsTest, ParsesLegacyNamesInAnyCase) {
  for (std::string_view spec : {"/cpu:0", "/CPU:0", "/Cpu:0", "/device:cpu:0", "/device:CPU:0"}) {
    ParsedDeviceName p = Parse(spec);
    EXPECT_TRUE(p.has_type && p.has_id) << spec;
    EXPECT_EQ(p.type, "CPU") << spec;
    EXPECT_EQ(p.id, 0) << spec;
    EXPECT_EQ(ParsedNameToString(p), "/device:CPU:0") << spec;
  }
  ParsedDeviceName p = Parse("/job:localhost/replica:0/task:0/gpu:2");
  EXPECT_EQ(p.type, "GPU");
  EXPECT_EQ(p.id, 2);
  p = Parse("/cpu:*");
  EXPECT_TRUE(p.has_type);
  EXPECT_FALSE(p.has_id);
  // Other types keep their spelling.
  EXPECT_EQ(Parse("/device:XLA_CPU:0").type, "XLA_CPU");
  EXPECT_EQ(Parse("/device:MyAccel:0").type, "MyAccel");
}

TEST(DeviceNameUtilsTest, WildcardsLeavePartsUnset) {
  ParsedDeviceName p = Parse("/device:CPU:*");
  EXPECT_TRUE(p.has_type);
  EXPECT_FALSE(p.has_id);
  EXPECT_EQ(ParsedNameToString(p), "/device:CPU:*");

  p = Parse("/job:*/replica:*/task:*/device:*:3");
  EXPECT_FALSE(p.has_job || p.has_replica || p.has_task || p.has_type);
  EXPECT_TRUE(p.has_id);
  EXPECT_EQ(p.id, 3);
  EXPECT_EQ(ParsedNameToString(p), "/device:*:3");

  p = Parse("/device:*");
  EXPECT_EQ(p, ParsedDeviceName());
}

// Each bad spec is InvalidArgument naming the spec and a phrase saying what is wrong.
TEST(DeviceNameUtilsTest, RejectsMalformedSpecsNamingTheProblem) {
  struct Case {
    std::string spec;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {"job:a", "must start with '/'"},
      {"cpu:0", "must start with '/'"},
      {"/job:a/", "empty component"},
      {"/job:a//task:0", "empty component"},
      {"/job", "not of the form 'key:value'"},
      {"/job:", "job name ''"},
      {"/job:1abc", "job name '1abc'"},
      {"/job:a-b", "job name 'a-b'"},
      {"/job:a/job:b", "job is given twice"},
      {"/replica:x", "replica 'x' is not a non-negative integer"},
      {"/replica:-1", "replica '-1'"},
      {"/replica:", "replica ''"},
      {"/task:1.5", "task '1.5'"},
      {"/task:99999999999", "task '99999999999'"},
      {"/task:0/task:1", "task is given twice"},
      {"/device:", "device type is empty"},
      {"/device::0", "device type is empty"},
      {"/device:C-PU:0", "device type 'C-PU'"},
      {"/device:CPU:x", "device id 'x'"},
      {"/device:CPU:", "device id ''"},
      {"/device:CPU:0:1", "device id '0:1'"},
      {"/cpu:a", "device id 'a'"},
      {"/cpu:0/device:CPU:0", "device is given twice"},
      {"/device:GPU:0/gpu:0", "device is given twice"},
      {"/tpu:0", "unknown component 'tpu:0'"},
      {"/foo:bar", "unknown component 'foo:bar'"},
      {"/JOB:a", "unknown component 'JOB:a'"},
  };
  for (const Case& c : cases) {
    auto parsed = ParseDeviceName(c.spec);
    ASSERT_FALSE(parsed.ok()) << c.spec;
    EXPECT_TRUE(IsInvalidArgument(parsed.status())) << parsed.status();
    EXPECT_NE(parsed.status().message().find("'" + c.spec + "'"), std::string::npos)
        << parsed.status();
    EXPECT_NE(parsed.status().message().find(c.problem), std::string::npos)
        << c.spec << " -> " << parsed.status();
  }
}

TEST(DeviceNameUtilsTest, CanonicalStringsRoundTrip) {
  const std::vector<std::string> canonical = {
      "",
      "/job:localhost/replica:0/task:0/device:CPU:0",
      "/job:worker/task:2",
      "/replica:1",
      "/device:CPU:1",
      "/device:GPU:*",
      "/device:*:7",
      "/job:ps/device:CPU:*",
      "/task:3/device:XLA_CPU:0",
  };
  for (const std::string& spec : canonical) {
    EXPECT_EQ(ParsedNameToString(Parse(spec)), spec);
  }
  // Non-canonical spellings print canonically, and the result parses back to the same value.
  const std::vector<std::pair<std::string, std::string>> respelled = {
      {"/", ""},
      {"/cpu:3", "/device:CPU:3"},
      {"/device:gpu", "/device:GPU:*"},
      {"/task:1/job:a", "/job:a/task:1"},
      {"/job:*/task:0", "/task:0"},
      {"/device:CPU:0/replica:0/job:x/task:0", "/job:x/replica:0/task:0/device:CPU:0"},
  };
  for (const auto& [spec, expected] : respelled) {
    ParsedDeviceName p = Parse(spec);
    EXPECT_EQ(ParsedNameToString(p), expected) << spec;
    EXPECT_EQ(Parse(expected), p) << spec;
  }
}

TEST(DeviceNameUtilsTest, FullNameIsCanonical) {
  EXPECT_EQ(FullName("localhost", 0, 0, "CPU", 3), "/job:localhost/replica:0/task:0/device:CPU:3");
  EXPECT_EQ(FullName("worker", 1, 2, "gpu", 0), "/job:worker/replica:1/task:2/device:GPU:0");
  EXPECT_TRUE(IsFullySpecified(Parse(FullName("w", 0, 1, "CPU", 2))));
}

TEST(DeviceNameUtilsTest, IsSpecification) {
  ParsedDeviceName full = Parse("/job:localhost/replica:0/task:0/device:CPU:1");
  EXPECT_TRUE(IsSpecification(Parse(""), full));
  EXPECT_TRUE(IsSpecification(Parse("/device:CPU:1"), full));
  EXPECT_TRUE(IsSpecification(Parse("/cpu:1"), full));
  EXPECT_TRUE(IsSpecification(Parse("/device:CPU:*"), full));
  EXPECT_TRUE(IsSpecification(Parse("/job:localhost"), full));
  EXPECT_TRUE(IsSpecification(Parse("/job:localhost/replica:0/task:0"), full));
  EXPECT_TRUE(IsSpecification(full, full));
  EXPECT_FALSE(IsSpecification(Parse("/device:CPU:0"), full));
  EXPECT_FALSE(IsSpecification(Parse("/device:GPU:1"), full));
  EXPECT_FALSE(IsSpecification(Parse("/job:worker"), full));
  EXPECT_FALSE(IsSpecification(Parse("/task:1"), full));
  // A part set in the first but missing from the second does not match.
  EXPECT_FALSE(IsSpecification(Parse("/device:CPU:1"), Parse("/device:CPU")));
  EXPECT_FALSE(IsSpecification(full, Parse("/device:CPU:1")));
  EXPECT_TRUE(IsSpecification(Parse("/device:CPU"), Parse("/device:CPU:1")));
}

TEST(DeviceNameUtilsTest, IsCompleteSpecificationNeedsAFullName) {
  ParsedDeviceName full = Parse("/job:a/replica:0/task:0/device:CPU:0");
  EXPECT_TRUE(IsCompleteSpecification(Parse("/cpu:0"), full));
  EXPECT_TRUE(IsCompleteSpecification(Parse(""), full));
  EXPECT_FALSE(IsCompleteSpecification(Parse("/cpu:1"), full));
  EXPECT_FALSE(IsCompleteSpecification(Parse("/cpu:0"), Parse("/job:a/device:CPU:0")));
}

TEST(DeviceNameUtilsTest, AreCompatible) {
  EXPECT_TRUE(AreCompatible(Parse("/job:a"), Parse("/device:CPU:0")));
  EXPECT_TRUE(AreCompatible(Parse("/device:CPU:*"), Parse("/device:CPU:0")));
  EXPECT_TRUE(AreCompatible(Parse(""), Parse("/job:a/replica:0/task:0/device:CPU:0")));
  EXPECT_FALSE(AreCompatible(Parse("/device:CPU:1"), Parse("/device:CPU:0")));
  EXPECT_FALSE(AreCompatible(Parse("/device:GPU:0"), Parse("/cpu:0")));
  EXPECT_FALSE(AreCompatible(Parse("/job:a"), Parse("/job:b/device:CPU:0")));
  EXPECT_FALSE(AreCompatible(Parse("/task:0"), Parse("/task:1")));
}

TEST(DeviceNameUtilsTest, MergeFillsUnsetParts) {
  ParsedDeviceName target = Parse("/job:a/task:1");
  ASSERT_TRUE(MergeDevNames(&target, Parse("/replica:0/device:CPU:2")).ok());
  EXPECT_EQ(ParsedNameToString(target), "/job:a/replica:0/task:1/device:CPU:2");
  // Merging a less specific or equal spec changes nothing.
  ASSERT_TRUE(MergeDevNames(&target, Parse("/job:a/cpu:2")).ok());
  ASSERT_TRUE(MergeDevNames(&target, Parse("")).ok());
  EXPECT_EQ(ParsedNameToString(target), "/job:a/replica:0/task:1/device:CPU:2");
  // A wildcard id takes the other's id.
  target = Parse("/device:CPU:*");
  ASSERT_TRUE(MergeDevNames(&target, Parse("/device:CPU:3")).ok());
  EXPECT_EQ(ParsedNameToString(target), "/device:CPU:3");
}

TEST(DeviceNameUtilsTest, MergeConflictsNameBothSpecsAndLeaveTheTargetAlone) {
  struct Case {
    std::string a, b, what;
  };
  const std::vector<Case> cases = {
      {"/job:a/device:CPU:0", "/job:b", "different jobs"},
      {"/replica:0", "/replica:1", "different replicas"},
      {"/job:a/task:0", "/task:1", "different tasks"},
      {"/device:CPU:0", "/device:GPU:0", "different device types"},
      {"/job:a/device:CPU:0", "/device:CPU:1", "different device ids"},
  };
  for (const Case& c : cases) {
    ParsedDeviceName target = Parse(c.a);
    ParsedDeviceName before = target;
    Status s = MergeDevNames(&target, Parse(c.b));
    ASSERT_TRUE(IsInvalidArgument(s)) << c.a << " + " << c.b << ": " << s;
    EXPECT_NE(s.message().find("'" + c.a + "'"), std::string::npos) << s;
    EXPECT_NE(s.message().find("'" + c.b + "'"), std::string::npos) << s;
    EXPECT_NE(s.message().find(c.what), std::string::npos) << s;
    EXPECT_EQ(target, before) << s;
  }
}

TEST(DeviceNameUtilsTest, SoftPlacementDropsTypeAndIdConflictsOnly) {
  ParsedDeviceName target = Parse("/job:a/device:CPU:0");
  ASSERT_TRUE(MergeDevNames(&target, Parse("/device:GPU:1"), /*allow_soft_placement=*/true).ok());
  EXPECT_EQ(ParsedNameToString(target), "/job:a");

  target = Parse("/job:a/device:CPU:0");
  ASSERT_TRUE(MergeDevNames(&target, Parse("/task:2/device:CPU:1"), true).ok());
  EXPECT_EQ(ParsedNameToString(target), "/job:a/task:2/device:CPU:*");

  target = Parse("/job:a");
  EXPECT_TRUE(IsInvalidArgument(MergeDevNames(&target, Parse("/job:b"), true)));
  EXPECT_EQ(ParsedNameToString(target), "/job:a");
}

TEST(DeviceNameUtilsTest, CanonicalizeDeviceNameCompletesFromTheBase) {
  const std::string base = "/job:worker/replica:0/task:3/device:CPU:0";
  auto check = [&](std::string_view spec, std::string_view expected) {
    auto result = CanonicalizeDeviceName(spec, base);
    ASSERT_TRUE(result.ok()) << spec << ": " << result.status();
    EXPECT_EQ(*result, expected) << spec;
  };
  check("", base);
  check("/cpu:1", "/job:worker/replica:0/task:3/device:CPU:1");
  check("/device:GPU:0", "/job:worker/replica:0/task:3/device:GPU:0");
  check("/device:GPU", "/job:worker/replica:0/task:3/device:GPU:*");
  check("/device:CPU", base);
  check("/job:ps/task:0", "/job:ps/replica:0/task:0/device:CPU:0");
  check("/job:localhost/replica:0/task:0/device:CPU:2",
        "/job:localhost/replica:0/task:0/device:CPU:2");
  EXPECT_TRUE(IsInvalidArgument(CanonicalizeDeviceName("/bogus:0", base).status()));
  EXPECT_TRUE(IsInvalidArgument(CanonicalizeDeviceName("/cpu:0", "job:x").status()));
}

}  // namespace
}  // namespace weft
