#include "weft/distribute/distributed_dataset.h"

#include <gtest/gtest.h>

#include "weft/distribute/all_reduce_cross_device_ops.h"
#include "weft/distribute/strategy.h"
#include "weft/distribute/testing/session_test_util.h"
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

// Two local replicas on worker 1 of 3: the numbers a MultiWorkerMirroredStrategy on task 1 has,
// without the server it would need.
class ThirdOfThreeWorkersForTesting final : public Strategy {
 public:
  ThirdOfThreeWorkersForTesting()
      : Strategy(testing::CpuDevices(2), std::make_unique<AllReduceCrossDeviceOps>(),
                 /*num_workers=*/3, /*worker_index=*/1) {}
};

// A dataset function that records every context it is called with and returns `batches` batches
// of per-replica batch x `local_replicas` rows, the per-replica batch taken from a global 12.
Strategy::DatasetFn Recording(std::vector<InputContext>* contexts, int batches,
                              int local_replicas) {
  return [=](const InputContext& context) -> StatusOr<DistributedDataset::BatchSource> {
    contexts->push_back(context);
    WEFT_ASSIGN_OR_RETURN(int64_t per_replica, context.GetPerReplicaBatchSize(12));
    return Batches(batches, per_replica * local_replicas);
  };
}

TEST(DistributedDatasetTest, FromFunctionCallsItOnceWithOnePipelineAndSplitsItsBatches) {
  auto strategy = MirroredStrategy::Create(testing::CpuDevices(2)).value();
  std::vector<InputContext> contexts;
  StatusOr<DistributedDataset> dataset =
      strategy->DistributeDatasetsFromFunction(Recording(&contexts, 2, 2));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ(contexts.size(), 1u);
  EXPECT_EQ(contexts[0].num_input_pipelines(), 1);
  EXPECT_EQ(contexts[0].input_pipeline_id(), 0);
  EXPECT_EQ(contexts[0].num_replicas_in_sync(), 2);
  std::vector<std::vector<Tensor>> per_replica;
  for (int index = 0; index < 2; ++index) {
    StatusOr<bool> more = dataset->Next(&per_replica);
    ASSERT_TRUE(more.ok()) << more.status();
    ASSERT_TRUE(*more);
    ASSERT_EQ(per_replica.size(), 2u);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(per_replica[r][0].shape(), TensorShape({6, 2}));
      EXPECT_EQ(per_replica[r][0].data<float>()[0], static_cast<float>(10 * index + 6 * r));
      EXPECT_EQ(per_replica[r][1].data<int64_t>()[0], 6 * r);
    }
  }
  StatusOr<bool> end = dataset->Next(&per_replica);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_FALSE(*end);
  EXPECT_EQ(contexts.size(), 1u);
}

TEST(DistributedDatasetTest, FromFunctionOnOneDeviceFeedsItsOnlyReplica) {
  auto strategy = OneDeviceStrategy::Create("/cpu:0").value();
  std::vector<InputContext> contexts;
  StatusOr<DistributedDataset> dataset =
      strategy->DistributeDatasetsFromFunction(Recording(&contexts, 1, 1));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ(contexts.size(), 1u);
  EXPECT_EQ(contexts[0].num_input_pipelines(), 1);
  EXPECT_EQ(contexts[0].input_pipeline_id(), 0);
  EXPECT_EQ(contexts[0].num_replicas_in_sync(), 1);
  std::vector<std::vector<Tensor>> per_replica;
  ASSERT_TRUE(dataset->Next(&per_replica).value());
  ASSERT_EQ(per_replica.size(), 1u);
  EXPECT_EQ(per_replica[0][0].shape(), TensorShape({12, 2}));
}

TEST(DistributedDatasetTest, FromFunctionOnAWorkerOfSeveralGetsThatWorkersPipeline) {
  ThirdOfThreeWorkersForTesting strategy;
  std::vector<InputContext> contexts;
  StatusOr<DistributedDataset> dataset =
      strategy.DistributeDatasetsFromFunction(Recording(&contexts, 1, 2));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ(contexts.size(), 1u);
  EXPECT_EQ(contexts[0].num_input_pipelines(), 3);
  EXPECT_EQ(contexts[0].input_pipeline_id(), 1);
  EXPECT_EQ(contexts[0].num_replicas_in_sync(), 6);
  // This worker's batch is 12 / 6 x 2 = 4 examples: two for each local replica.
  std::vector<std::vector<Tensor>> per_replica;
  ASSERT_TRUE(dataset->Next(&per_replica).value());
  ASSERT_EQ(per_replica.size(), 2u);
  EXPECT_EQ(per_replica[1][0].shape(), TensorShape({2, 2}));
  EXPECT_TENSOR_EQ(per_replica[1][1], Tensor::FromVector<int64_t>({2, 3}));
}

TEST(DistributedDatasetTest, ADataDatasetIsSplitOverTheReplicasOfEachWorker) {
  Tensor rows(DataType::kInt64, TensorShape({24}));
  for (int64_t i = 0; i < 24; ++i) rows.data<int64_t>()[i] = i;
  data::Dataset batches = data::Dataset::FromTensors({rows}).Batch(12);
  // One worker, two replicas: six rows each.
  auto mirrored = MirroredStrategy::Create(testing::CpuDevices(2)).value();
  StatusOr<DistributedDataset> one = mirrored->ExperimentalDistributeDataset(batches);
  ASSERT_TRUE(one.ok()) << one.status();
  std::vector<std::vector<Tensor>> per_replica;
  ASSERT_TRUE(one->Next(&per_replica).value());
  ASSERT_EQ(per_replica.size(), 2u);
  EXPECT_TENSOR_EQ(per_replica[1][0], Tensor::FromVector<int64_t>({6, 7, 8, 9, 10, 11}));
  // Worker 1 of 3 with two replicas: rows 4..7 of every global batch, two per replica.
  ThirdOfThreeWorkersForTesting worker;
  StatusOr<DistributedDataset> share = worker.ExperimentalDistributeDataset(batches);
  ASSERT_TRUE(share.ok()) << share.status();
  ASSERT_TRUE(share->Next(&per_replica).value());
  EXPECT_TENSOR_EQ(per_replica[0][0], Tensor::FromVector<int64_t>({4, 5}));
  EXPECT_TENSOR_EQ(per_replica[1][0], Tensor::FromVector<int64_t>({6, 7}));
  ASSERT_TRUE(share->Next(&per_replica).value());
  EXPECT_TENSOR_EQ(per_replica[0][0], Tensor::FromVector<int64_t>({16, 17}));
  EXPECT_FALSE(share->Next(&per_replica).value());
  // A global batch that does not split over the workers, and a dataset that cannot start.
  StatusOr<DistributedDataset> uneven =
      worker.ExperimentalDistributeDataset(data::Dataset::FromTensors({rows}).Batch(8));
  ASSERT_TRUE(uneven.ok());
  Status status = uneven->Next(&per_replica).status();
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_NE(status.message().find("8 rows, which do not split over 3 workers"), std::string::npos)
      << status;
  EXPECT_TRUE(IsInvalidArgument(
      worker.ExperimentalDistributeDataset(data::Dataset::FromTensors({rows}).Batch(0)).status()));
}

TEST(DistributedDatasetTest, FromFunctionReturnsTheFunctionsErrorNamingThePipeline) {
  ThirdOfThreeWorkersForTesting strategy;
  Status s = strategy
                 .DistributeDatasetsFromFunction(
                     [](const InputContext&) -> StatusOr<DistributedDataset::BatchSource> {
                       return NotFound("no shard file 'train-1.idx'");
                     })
                 .status();
  ASSERT_TRUE(IsNotFound(s)) << s;
  EXPECT_NE(s.message().find("input pipeline 1 of 3"), std::string::npos) << s;
  EXPECT_NE(s.message().find("train-1.idx"), std::string::npos) << s;
  // The global batch a dataset function cannot divide fails the same way.
  auto mirrored = MirroredStrategy::Create(testing::CpuDevices(2)).value();
  s = mirrored
          ->DistributeDatasetsFromFunction(
              [](const InputContext& context) -> StatusOr<DistributedDataset::BatchSource> {
                WEFT_ASSIGN_OR_RETURN(int64_t per_replica, context.GetPerReplicaBatchSize(5));
                return Batches(1, per_replica);
              })
          .status();
  ASSERT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("input pipeline 0 of 1"), std::string::npos) << s;
  EXPECT_NE(s.message().find("5"), std::string::npos) << s;
}

TEST(DistributedDatasetTest, FromFunctionRefusesAMissingFunctionOrSource) {
  auto strategy = MirroredStrategy::Create(testing::CpuDevices(2)).value();
  Status s = strategy->DistributeDatasetsFromFunction(nullptr).status();
  EXPECT_TRUE(IsInvalidArgument(s)) << s;
  s = strategy
          ->DistributeDatasetsFromFunction(
              [](const InputContext&) -> StatusOr<DistributedDataset::BatchSource> {
                return DistributedDataset::BatchSource();
              })
          .status();
  ASSERT_TRUE(IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("no source"), std::string::npos) << s;
}

}  // namespace
}  // namespace weft::distribute
