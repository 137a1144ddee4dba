#include "weft/distribute/input_context.h"

#include <gtest/gtest.h>

namespace weft::distribute {
namespace {

TEST(InputContextTest, DefaultsDescribeOnePipelineFeedingOneReplica) {
  InputContext context;
  EXPECT_EQ(context.num_input_pipelines(), 1);
  EXPECT_EQ(context.input_pipeline_id(), 0);
  EXPECT_EQ(context.num_replicas_in_sync(), 1);
  StatusOr<int64_t> per_replica = context.GetPerReplicaBatchSize(7);
  ASSERT_TRUE(per_replica.ok()) << per_replica.status();
  EXPECT_EQ(*per_replica, 7);
}

TEST(InputContextTest, PerReplicaBatchDividesTheGlobalBatchOverEveryWorkersReplicas) {
  InputContext context(/*num_input_pipelines=*/2, /*input_pipeline_id=*/1,
                       /*num_replicas_in_sync=*/4);
  EXPECT_EQ(context.num_input_pipelines(), 2);
  EXPECT_EQ(context.input_pipeline_id(), 1);
  EXPECT_EQ(context.num_replicas_in_sync(), 4);
  StatusOr<int64_t> per_replica = context.GetPerReplicaBatchSize(128);
  ASSERT_TRUE(per_replica.ok()) << per_replica.status();
  EXPECT_EQ(*per_replica, 32);
}

TEST(InputContextTest, AnIndivisibleGlobalBatchNamesBothNumbers) {
  InputContext context(1, 0, 3);
  Status s = context.GetPerReplicaBatchSize(128).status();
  ASSERT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("128"), std::string::npos) << s;
  EXPECT_NE(s.message().find("3 replicas"), std::string::npos) << s;
}

TEST(InputContextTest, AnEmptyGlobalBatchIsRefused) {
  InputContext context(1, 0, 2);
  EXPECT_TRUE(IsInvalidArgument(context.GetPerReplicaBatchSize(0).status()));
  EXPECT_TRUE(IsInvalidArgument(context.GetPerReplicaBatchSize(-4).status()));
}

}  // namespace
}  // namespace weft::distribute
