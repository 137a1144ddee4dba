// The names of the distribution enums, as messages print them.
#include "weft/distribute/reduce_op.h"

#include <gtest/gtest.h>

namespace weft::distribute {
namespace {

TEST(ReduceOpTest, NamesFollowTheReferenceSpelling) {
  EXPECT_EQ(ReduceOpName(ReduceOp::kSum), "SUM");
  EXPECT_EQ(ReduceOpName(ReduceOp::kMean), "MEAN");
  EXPECT_EQ(VariableAggregationName(VariableAggregation::kNone), "NONE");
  EXPECT_EQ(VariableAggregationName(VariableAggregation::kSum), "SUM");
  EXPECT_EQ(VariableAggregationName(VariableAggregation::kMean), "MEAN");
  EXPECT_EQ(VariableAggregationName(VariableAggregation::kOnlyFirstReplica), "ONLY_FIRST_REPLICA");
  EXPECT_EQ(VariableSynchronizationName(VariableSynchronization::kAuto), "AUTO");
  EXPECT_EQ(VariableSynchronizationName(VariableSynchronization::kOnWrite), "ON_WRITE");
  EXPECT_EQ(VariableSynchronizationName(VariableSynchronization::kOnRead), "ON_READ");
}

}  // namespace
}  // namespace weft::distribute
