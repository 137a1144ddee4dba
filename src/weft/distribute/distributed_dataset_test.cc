#include "weft/distribute/distributed_dataset.h"

#include <gtest/gtest.h>

#include "weft/distribute/session_test_util.h"
#include "weft/distribute/strategy.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::distribute {
namespace {

// Global batches of `rows` rows: images [rows, 2] counting up from 10 * index, labels [rows].
DistributedDataset::GlobalBatchSource Batches(int count, int64_t rows) {
  return [count, rows, index = 0](std::vector<Tensor>* batch) mutable -> StatusOr<bool> {
    if (index == count) return false;
    Tensor images(DataType::kFloat, TensorShape({rows, 2}));
    Tensor labels(DataType::kInt64, TensorShape({rows}));
    for (int64_t i = 0; i < rows; ++i) {
      images.data<float>()[2 * i] = static_cast<float>(10 * index + i);
      images.data<float>()[2 * i + 1] = 0;
      labels.data<int64_t>()[i] = i;
    }
    *batch = {images, labels};
    ++index;
    return true;
  };
}

TEST(DistributedDatasetTest, EachReplicaGetsItsSliceOfEveryComponent) {
  auto strategy = MirroredStrategy::Create(testing::CpuDevices(2)).value();
  DistributedDataset dataset = strategy->ExperimentalDistributeDataset(Batches(2, 4));
  std::vector<std::vector<Tensor>> per_replica;
  for (int index = 0; index < 2; ++index) {
    StatusOr<bool> more = dataset.Next(&per_replica);
    ASSERT_TRUE(more.ok()) << more.status();
    ASSERT_TRUE(*more);
    ASSERT_EQ(per_replica.size(), 2u);
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(per_replica[r].size(), 2u);
      EXPECT_EQ(per_replica[r][0].shape(), TensorShape({2, 2}));
      EXPECT_EQ(per_replica[r][0].data<float>()[0], static_cast<float>(10 * index + 2 * r));
      EXPECT_TENSOR_EQ(per_replica[r][1], Tensor::FromVector<int64_t>({2 * r, 2 * r + 1}));
    }
  }
  StatusOr<bool> end = dataset.Next(&per_replica);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
}

TEST(DistributedDatasetTest, AnIndivisibleGlobalBatchNamesBothNumbers) {
  auto strategy = MirroredStrategy::Create(testing::CpuDevices(2)).value();
  DistributedDataset dataset = strategy->ExperimentalDistributeDataset(Batches(1, 5));
  std::vector<std::vector<Tensor>> per_replica;
  Status s = dataset.Next(&per_replica).status();
  ASSERT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("5"), std::string::npos) << s;
  EXPECT_NE(s.message().find("2 replicas"), std::string::npos) << s;
  EXPECT_NE(s.message().find("component 0"), std::string::npos) << s;
}

}  // namespace
}  // namespace weft::distribute
