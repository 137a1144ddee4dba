#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels::state {
namespace {

using ::testing::HasSubstr;
using weft::testing::KernelRunner;

std::map<std::string, proto::AttrValue> StageAttrs(const std::string& stage,
                                                   std::vector<DataType> dtypes) {
  return {{"stage", MakeAttrValue(stage)}, {"dtypes", MakeAttrValue(dtypes)}};
}

Tensor Id(int64_t id) { return Tensor::Scalar<int64_t>(id); }

TEST(StagingOpsTest, UnstageTakesWhatWasStagedOnce) {
  KernelRunner runner;
  const Tensor a = Tensor::FromVector<float>({1, 2, 3});
  const Tensor b = Tensor::FromVector<int64_t>({7, 8});
  const auto attrs = StageAttrs("s", {DataType::kFloat, DataType::kInt64});
  ASSERT_TRUE(runner.Run("_StageTensors", {Id(5), a, b}, attrs).ok());
  StatusOr<std::vector<Tensor>> taken = runner.Run("_UnstageTensors", {Id(5)}, attrs);
  ASSERT_TRUE(taken.ok()) << taken.status();
  ASSERT_EQ(taken->size(), 2u);
  EXPECT_TENSOR_EQ((*taken)[0], a);
  EXPECT_TENSOR_EQ((*taken)[1], b);
  // Taken: a second commit of the same id finds nothing, and says so.
  StatusOr<std::vector<Tensor>> again = runner.Run("_UnstageTensors", {Id(5)}, attrs);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Code::kNotFound);
  EXPECT_THAT(again.status().message(), HasSubstr("nothing is staged for commit 5 in stage 's'"));
}

TEST(StagingOpsTest, CommitIdsAndStagesAreKeptApart) {
  KernelRunner runner;
  const auto s = StageAttrs("s", {DataType::kFloat});
  const auto t = StageAttrs("t", {DataType::kFloat});
  ASSERT_TRUE(runner.Run("_StageTensors", {Id(1), Tensor::FromVector<float>({1})}, s).ok());
  ASSERT_TRUE(runner.Run("_StageTensors", {Id(2), Tensor::FromVector<float>({2})}, s).ok());
  ASSERT_TRUE(runner.Run("_StageTensors", {Id(1), Tensor::FromVector<float>({3})}, t).ok());
  // Staging a key again replaces its values (a retried step).
  ASSERT_TRUE(runner.Run("_StageTensors", {Id(2), Tensor::FromVector<float>({4})}, s).ok());
  EXPECT_TENSOR_EQ(runner.Run("_UnstageTensors", {Id(2)}, s).value()[0],
                   Tensor::FromVector<float>({4}));
  EXPECT_TENSOR_EQ(runner.Run("_UnstageTensors", {Id(1)}, t).value()[0],
                   Tensor::FromVector<float>({3}));
  EXPECT_TENSOR_EQ(runner.Run("_UnstageTensors", {Id(1)}, s).value()[0],
                   Tensor::FromVector<float>({1}));
}

TEST(StagingOpsTest, DiscardDropsAStepsValues) {
  KernelRunner runner;
  const auto attrs = StageAttrs("s", {DataType::kFloat});
  ASSERT_TRUE(runner.Run("_StageTensors", {Id(3), Tensor::FromVector<float>({1})}, attrs).ok());
  const std::map<std::string, proto::AttrValue> discard = {{"stage", MakeAttrValue("s")}};
  ASSERT_TRUE(runner.Run("_DiscardStagedTensors", {Id(3)}, discard).ok());
  EXPECT_EQ(runner.Run("_UnstageTensors", {Id(3)}, attrs).status().code(), Code::kNotFound);
  // Discarding what is not there is no error (a step that failed before staging).
  EXPECT_TRUE(runner.Run("_DiscardStagedTensors", {Id(9)}, discard).ok());
}

TEST(StagingOpsTest, AnUnstageOfOtherTypesIsRefusedNamingTheValue) {
  KernelRunner runner;
  ASSERT_TRUE(runner
                  .Run("_StageTensors", {Id(1), Tensor::FromVector<float>({1})},
                       StageAttrs("s", {DataType::kFloat}))
                  .ok());
  Status wrong =
      runner.Run("_UnstageTensors", {Id(1)}, StageAttrs("s", {DataType::kInt32})).status();
  EXPECT_EQ(wrong.code(), Code::kInvalidArgument);
  EXPECT_THAT(wrong.message(), HasSubstr("value 0 of commit 1 is float32, expected int32"));
}

}  // namespace
}  // namespace weft::kernels::state
