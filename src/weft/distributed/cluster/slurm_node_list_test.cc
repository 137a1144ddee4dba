#include "weft/distributed/cluster/slurm_node_list.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

std::vector<std::string> Expand(std::string_view list) {
  StatusOr<std::vector<std::string>> names = ExpandSlurmNodeList(list);
  EXPECT_TRUE(names.ok()) << names.status();
  return names.ok() ? *names : std::vector<std::string>();
}

void ExpectError(std::string_view list, std::string_view part) {
  StatusOr<std::vector<std::string>> names = ExpandSlurmNodeList(list);
  ASSERT_FALSE(names.ok()) << list;
  EXPECT_TRUE(IsInvalidArgument(names.status()));
  EXPECT_NE(names.status().message().find(part), std::string::npos) << names.status();
}

TEST(SlurmNodeListTest, ExpandsPlainNames) {
  EXPECT_EQ(Expand("alpha"), (std::vector<std::string>{"alpha"}));
  EXPECT_EQ(Expand("alpha,beta"), (std::vector<std::string>{"alpha", "beta"}));
}

TEST(SlurmNodeListTest, ExpandsRangesKeepingTheirWidth) {
  EXPECT_EQ(Expand("node[01-03,07]"),
            (std::vector<std::string>{"node01", "node02", "node03", "node07"}));
  EXPECT_EQ(Expand("n[9-11]"), (std::vector<std::string>{"n9", "n10", "n11"}));
  EXPECT_EQ(Expand("n[098-100]"), (std::vector<std::string>{"n098", "n099", "n100"}));
}

TEST(SlurmNodeListTest, ExpandsSeveralEntriesAndGroups) {
  EXPECT_EQ(Expand("gpu[1-2],cpu7,rack[1-2]-n[1-2]"),
            (std::vector<std::string>{"gpu1", "gpu2", "cpu7", "rack1-n1", "rack1-n2", "rack2-n1",
                                      "rack2-n2"}));
}

TEST(SlurmNodeListTest, MalformedListsNameTheBadPart) {
  ExpectError("node[01-03", "unclosed");
  ExpectError("node01-03]", "unbalanced");
  ExpectError("node[[1]]", "unbalanced");
  ExpectError("node[3-1]", "'3-1' ends before it starts");
  ExpectError("node[a-b]", "'a-b' is not a number");
  ExpectError("node[]", "is not a number");
  ExpectError("a,,b", "empty host name");
  ExpectError("", "empty host name");
  ExpectError("n[0-99999999]", "more than");
  ExpectError("a[0-999]b[0-999]", "more than");
}

}  // namespace
}  // namespace weft
