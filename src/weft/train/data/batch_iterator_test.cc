#include "weft/train/data/batch_iterator.h"

#include <algorithm>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace weft::train {
namespace {

using ::testing::HasSubstr;

// n examples of `width` floats; example i is filled with i and labelled i.
Dataset CountingDataset(int64_t n, int64_t width) {
  Dataset dataset;
  dataset.height = 1;
  dataset.width = width;
  dataset.images = Tensor(DataType::kFloat, TensorShape({n, width}));
  dataset.labels = Tensor(DataType::kInt64, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < width; ++j) dataset.images.data<float>()[i * width + j] = i;
    dataset.labels.data<int64_t>()[i] = i;
  }
  return dataset;
}

BatchIterator MakeIterator(const Dataset& dataset, BatchOptions options) {
  StatusOr<BatchIterator> iterator = BatchIterator::Create(dataset, options);
  EXPECT_TRUE(iterator.ok()) << iterator.status();
  return std::move(iterator).value();
}

// Runs one epoch; returns the labels in visiting order and checks each image row matches its
// label and each batch's shape.
std::vector<int64_t> RunEpoch(BatchIterator& iterator, int64_t width,
                              std::vector<int64_t>* batch_sizes = nullptr) {
  std::vector<int64_t> seen;
  Tensor images, labels;
  int64_t guard = 0;
  while (iterator.Next(&images, &labels) && guard++ < 10000) {
    const int64_t rows = labels.dim_size(0);
    EXPECT_EQ(images.shape(), TensorShape({rows, width}));
    if (batch_sizes != nullptr) batch_sizes->push_back(rows);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t label = labels.data<int64_t>()[i];
      seen.push_back(label);
      for (int64_t j = 0; j < width; ++j) {
        EXPECT_EQ(images.data<float>()[i * width + j], static_cast<float>(label));
      }
    }
  }
  EXPECT_FALSE(images.IsInitialized());
  EXPECT_FALSE(labels.IsInitialized());
  return seen;
}

TEST(BatchIteratorTest, RejectsNonPositiveBatchSizesAndBadDatasets) {
  Dataset dataset = CountingDataset(4, 2);
  for (int64_t size : {0, -3}) {
    StatusOr<BatchIterator> iterator = BatchIterator::Create(dataset, {.batch_size = size});
    EXPECT_TRUE(IsInvalidArgument(iterator.status()));
    EXPECT_THAT(iterator.status().message(), HasSubstr("batch_size"));
  }
  EXPECT_TRUE(IsInvalidArgument(BatchIterator::Create(Dataset(), {}).status()));
  Dataset mismatched = dataset;
  mismatched.labels = Tensor(DataType::kInt64, TensorShape({3}));
  EXPECT_TRUE(IsInvalidArgument(BatchIterator::Create(mismatched, {}).status()));
}

TEST(BatchIteratorTest, InOrderBatchesDropTheRemainderByDefault) {
  Dataset dataset = CountingDataset(10, 3);
  BatchIterator iterator = MakeIterator(dataset, {.batch_size = 4, .shuffle = false});
  EXPECT_EQ(iterator.NumBatches(), 2);
  std::vector<int64_t> sizes;
  std::vector<int64_t> seen = RunEpoch(iterator, 3, &sizes);
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  Tensor images, labels;
  EXPECT_FALSE(iterator.Next(&images, &labels));  // stays exhausted until StartEpoch
}

TEST(BatchIteratorTest, KeepsThePartialBatchWhenAsked) {
  Dataset dataset = CountingDataset(10, 3);
  for (bool shuffle : {false, true}) {
    BatchIterator iterator = MakeIterator(
        dataset, {.batch_size = 4, .shuffle = shuffle, .seed = 5, .drop_remainder = false});
    EXPECT_EQ(iterator.NumBatches(), 3);
    std::vector<int64_t> sizes;
    std::vector<int64_t> seen = RunEpoch(iterator, 3, &sizes);
    EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  }
}

TEST(BatchIteratorTest, BatchLargerThanTheDataset) {
  Dataset dataset = CountingDataset(3, 2);
  BatchIterator dropping = MakeIterator(dataset, {.batch_size = 5});
  EXPECT_EQ(dropping.NumBatches(), 0);
  EXPECT_TRUE(RunEpoch(dropping, 2).empty());
  BatchIterator keeping = MakeIterator(dataset, {.batch_size = 5, .drop_remainder = false});
  EXPECT_EQ(keeping.NumBatches(), 1);
  EXPECT_EQ(RunEpoch(keeping, 2).size(), 3u);
}

TEST(BatchIteratorTest, ShuffledEpochVisitsEveryExampleOnce) {
  Dataset dataset = CountingDataset(1000, 5);
  BatchIterator iterator = MakeIterator(dataset, {.batch_size = 10, .seed = 1});
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    iterator.StartEpoch(epoch);
    EXPECT_EQ(iterator.epoch(), epoch);
    std::vector<int64_t> seen = RunEpoch(iterator, 5);
    ASSERT_EQ(seen.size(), 1000u);
    EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 1000u);
    std::vector<int64_t> sorted = seen;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_NE(seen, sorted) << "epoch " << epoch << " was not shuffled";
  }
}

TEST(BatchIteratorTest, OrderDependsOnlyOnSeedAndEpoch) {
  Dataset dataset = CountingDataset(200, 1);
  BatchIterator a = MakeIterator(dataset, {.batch_size = 8, .seed = 42});
  BatchIterator b = MakeIterator(dataset, {.batch_size = 8, .seed = 42});
  BatchIterator c = MakeIterator(dataset, {.batch_size = 8, .seed = 43});
  std::vector<int64_t> a0 = RunEpoch(a, 1);
  EXPECT_EQ(a0, RunEpoch(b, 1));
  EXPECT_NE(a0, RunEpoch(c, 1));
  a.StartEpoch(1);
  std::vector<int64_t> a1 = RunEpoch(a, 1);
  EXPECT_NE(a0, a1);
  b.StartEpoch(1);
  EXPECT_EQ(a1, RunEpoch(b, 1));
  a.StartEpoch(0);  // revisiting an epoch replays it
  EXPECT_EQ(a0, RunEpoch(a, 1));
}

TEST(BatchIteratorTest, ShuffledOrderIsPinned) {
  // Guards the order against library changes: it must never depend on the standard library's
  // distributions, so runs reproduce across platforms.
  std::vector<int64_t> order;
  ShuffledOrder(42, 0, 10, &order);
  std::vector<int64_t> again;
  ShuffledOrder(42, 0, 10, &again);
  EXPECT_EQ(order, again);
  EXPECT_EQ(order, (std::vector<int64_t>{0, 6, 5, 1, 3, 9, 7, 8, 4, 2}));
  ShuffledOrder(42, 0, 0, &order);
  EXPECT_TRUE(order.empty());
  ShuffledOrder(42, 0, 1, &order);
  EXPECT_EQ(order, (std::vector<int64_t>{0}));
}

TEST(BatchIteratorTest, ReusesBatchBuffersTheCallerReleased) {
  Dataset dataset = CountingDataset(64, 16);
  BatchIterator iterator = MakeIterator(dataset, {.batch_size = 8, .seed = 3});
  Tensor images, labels;
  ASSERT_TRUE(iterator.Next(&images, &labels));
  const void* first_images = images.raw_data();
  const void* first_labels = labels.raw_data();
  ASSERT_TRUE(iterator.Next(&images, &labels));  // passing the batch back releases it
  EXPECT_EQ(images.raw_data(), first_images);
  EXPECT_EQ(labels.raw_data(), first_labels);

  // A batch the caller keeps is never overwritten.
  Tensor kept_images = images, kept_labels = labels;
  const int64_t kept_label = kept_labels.data<int64_t>()[0];
  ASSERT_TRUE(iterator.Next(&images, &labels));
  EXPECT_FALSE(images.SharesBufferWith(kept_images));
  EXPECT_FALSE(labels.SharesBufferWith(kept_labels));
  EXPECT_EQ(kept_labels.data<int64_t>()[0], kept_label);
  EXPECT_EQ(kept_images.data<float>()[0], static_cast<float>(kept_label));
}

TEST(BatchIteratorTest, InOrderBatchesAreViewsOfTheDataset) {
  Dataset dataset = CountingDataset(12, 4);
  BatchIterator iterator = MakeIterator(dataset, {.batch_size = 5, .shuffle = false});
  Tensor images, labels;
  ASSERT_TRUE(iterator.Next(&images, &labels));
  ASSERT_TRUE(iterator.Next(&images, &labels));
  EXPECT_TRUE(images.SharesBufferWith(dataset.images));
  EXPECT_FALSE(images.RefCountIsOne());  // so no kernel writes into the dataset in place
  EXPECT_EQ(labels.data<int64_t>()[0], 5);
}

TEST(BatchIteratorTest, ShardsSplitEveryGlobalBatchIntoContiguousShares) {
  Dataset dataset = CountingDataset(1000, 3);
  for (bool shuffle : {true, false}) {
    BatchIterator whole = MakeIterator(dataset, {.batch_size = 12, .shuffle = shuffle, .seed = 4});
    whole.StartEpoch(2);
    const std::vector<int64_t> global = RunEpoch(whole, 3);
    std::vector<std::vector<int64_t>> shares;
    for (int64_t shard = 0; shard < 3; ++shard) {
      BatchIterator part = MakeIterator(
          dataset,
          {.batch_size = 12, .shuffle = shuffle, .seed = 4, .num_shards = 3, .shard_index = shard});
      part.StartEpoch(2);
      std::vector<int64_t> sizes;
      shares.push_back(RunEpoch(part, 3, &sizes));
      ASSERT_EQ(sizes.size(), 83u);
      for (int64_t size : sizes) EXPECT_EQ(size, 4);
    }
    // Share s of batch b is examples [4s, 4s + 4) of the global batch b.
    for (size_t b = 0; b < 83; ++b) {
      for (size_t s = 0; s < 3; ++s) {
        for (size_t i = 0; i < 4; ++i) {
          EXPECT_EQ(shares[s][b * 4 + i], global[b * 12 + s * 4 + i]) << b << " " << s << " " << i;
        }
      }
    }
  }
}

TEST(BatchIteratorTest, BadShardsNameBothNumbers) {
  Dataset dataset = CountingDataset(100, 2);
  StatusOr<BatchIterator> indivisible =
      BatchIterator::Create(dataset, {.batch_size = 10, .num_shards = 3});
  EXPECT_TRUE(IsInvalidArgument(indivisible.status()));
  EXPECT_NE(indivisible.status().message().find("10"), std::string::npos);
  EXPECT_NE(indivisible.status().message().find("3 workers"), std::string::npos);
  EXPECT_FALSE(
      BatchIterator::Create(dataset, {.batch_size = 10, .num_shards = 2, .shard_index = 2}).ok());
  EXPECT_FALSE(
      BatchIterator::Create(dataset, {.batch_size = 10, .drop_remainder = false, .num_shards = 2})
          .ok());
}

}  // namespace
}  // namespace weft::train
