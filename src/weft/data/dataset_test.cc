#include "weft/data/dataset.h"

#include <algorithm>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/data/testing/data_test_util.h"

namespace weft::data {
namespace {

using testing::Collect;
using testing::Range;
using testing::Scalars;

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<int64_t> Sorted(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  return values;
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = i;
  return values;
}

TEST(FromTensorsTest, SlicesEveryComponentAlongDimZero) {
  Tensor features = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  Tensor labels = Tensor::FromVector<int64_t>({7, 8, 9});
  StatusOr<std::vector<Element>> elements = Collect(Dataset::FromTensors({features, labels}));
  ASSERT_TRUE(elements.ok()) << elements.status();
  ASSERT_EQ(elements->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const Element& element = (*elements)[i];
    ASSERT_EQ(element.size(), 2u);
    EXPECT_EQ(element[0].shape(), TensorShape({2}));
    EXPECT_EQ(element[0].flat<float>()[0], 2 * i + 1);
    EXPECT_EQ(element[0].flat<float>()[1], 2 * i + 2);
    EXPECT_EQ(element[1].shape(), TensorShape());
  }
  EXPECT_THAT(Scalars<int64_t>(*elements, 1), ElementsAre(7, 8, 9));
}

TEST(FromTensorsTest, MismatchedDimZeroNamesComponentAndSizes) {
  Dataset dataset = Dataset::FromTensors(
      {Tensor::FromVector<int64_t>({1, 2, 3}), Tensor::FromVector<float>({1, 2})});
  EXPECT_TRUE(IsInvalidArgument(dataset.status()));
  EXPECT_THAT(dataset.status().message(), HasSubstr("component 1 has 2 rows"));
  EXPECT_THAT(dataset.status().message(), HasSubstr("component 0 has 3"));
  // The error travels through later transformations and comes back from MakeIterator.
  StatusOr<std::unique_ptr<Iterator>> iterator = dataset.Batch(2).Shuffle(4, 1).MakeIterator();
  EXPECT_EQ(iterator.status(), dataset.status());
}

TEST(FromTensorsTest, RejectsScalarsAndNoComponents) {
  EXPECT_TRUE(IsInvalidArgument(Dataset::FromTensors({}).status()));
  EXPECT_TRUE(IsInvalidArgument(Dataset::FromTensors({Tensor::Scalar<float>(1)}).status()));
}

TEST(BatchTest, StacksAndKeepsPartialLastBatch) {
  StatusOr<std::vector<Element>> batches = Collect(Range(7).Batch(3));
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 3u);
  EXPECT_EQ((*batches)[0][0].shape(), TensorShape({3}));
  EXPECT_THAT((*batches)[1][0].flat<int64_t>(), ElementsAre(3, 4, 5));
  EXPECT_EQ((*batches)[2][0].shape(), TensorShape({1}));
  EXPECT_THAT((*batches)[2][0].flat<int64_t>(), ElementsAre(6));
}

TEST(BatchTest, DropRemainderDropsShortBatch) {
  StatusOr<std::vector<Element>> batches = Collect(Range(7).Batch(3, /*drop_remainder=*/true));
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 2u);
  EXPECT_THAT((*batches)[1][0].flat<int64_t>(), ElementsAre(3, 4, 5));
}

TEST(BatchTest, StacksMatricesAlongNewDimension) {
  Tensor rows = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}, TensorShape({4, 2}));
  StatusOr<std::vector<Element>> batches = Collect(Dataset::FromTensors({rows}).Batch(2).Batch(2));
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 1u);
  EXPECT_EQ((*batches)[0][0].shape(), TensorShape({2, 2, 2}));
  EXPECT_THAT((*batches)[0][0].flat<float>(), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
}

TEST(BatchTest, DifferingShapesNameComponentAndShapes) {
  Dataset ragged = Range(4).Map([](Element element) -> StatusOr<Element> {
    const int64_t n = element[0].flat<int64_t>()[0];
    return Element{element[0], Tensor::FromVector(std::vector<float>(n + 1, 0.5f))};
  });
  StatusOr<std::vector<Element>> batches = Collect(ragged.Batch(2));
  ASSERT_FALSE(batches.ok());
  EXPECT_TRUE(IsInvalidArgument(batches.status()));
  EXPECT_THAT(batches.status().message(), HasSubstr("component 1"));
  EXPECT_THAT(batches.status().message(), HasSubstr("[1]"));
  EXPECT_THAT(batches.status().message(), HasSubstr("[2]"));
}

TEST(BatchTest, BadBatchSizeIsInvalidArgument) {
  EXPECT_TRUE(IsInvalidArgument(Range(3).Batch(0).MakeIterator().status()));
  EXPECT_TRUE(IsInvalidArgument(Range(3).Batch(-2).status()));
}

TEST(ShuffleTest, SameSeedSameOrderOtherSeedDiffers) {
  StatusOr<std::vector<Element>> first = Collect(Range(100).Shuffle(16, 42));
  StatusOr<std::vector<Element>> second = Collect(Range(100).Shuffle(16, 42));
  StatusOr<std::vector<Element>> other = Collect(Range(100).Shuffle(16, 43));
  ASSERT_TRUE(first.ok() && second.ok() && other.ok());
  const std::vector<int64_t> order = Scalars<int64_t>(*first);
  EXPECT_EQ(order, Scalars<int64_t>(*second));
  EXPECT_NE(order, Scalars<int64_t>(*other));
  EXPECT_NE(order, Iota(100));
  EXPECT_EQ(Sorted(order), Iota(100));
  EXPECT_EQ(Sorted(Scalars<int64_t>(*other)), Iota(100));
}

TEST(ShuffleTest, BufferLargerThanInput) {
  StatusOr<std::vector<Element>> elements = Collect(Range(5).Shuffle(1000, 7));
  ASSERT_TRUE(elements.ok());
  EXPECT_EQ(Sorted(Scalars<int64_t>(*elements)), Iota(5));
  EXPECT_TRUE(IsInvalidArgument(Range(5).Shuffle(0, 1).status()));
}

TEST(ShuffleTest, AnIteratorForEpochKDrawsRepeatsKthOrder) {
  Dataset shuffled = Range(20).Shuffle(20, 9);
  StatusOr<std::vector<Element>> repeated = Collect(shuffled.Repeat(2));
  ASSERT_TRUE(repeated.ok());
  const std::vector<int64_t> both = Scalars<int64_t>(*repeated);
  for (uint64_t epoch : {0u, 1u}) {
    StatusOr<std::unique_ptr<Iterator>> iterator = shuffled.MakeIterator(epoch);
    ASSERT_TRUE(iterator.ok());
    std::vector<int64_t> pass;
    Element element;
    bool end = false;
    for (int i = 0; i < 25 && !end; ++i) {
      ASSERT_TRUE((*iterator)->GetNext(&element, &end).ok());
      if (!end) pass.push_back(element[0].flat<int64_t>()[0]);
    }
    EXPECT_EQ(pass,
              std::vector<int64_t>(both.begin() + 20 * epoch, both.begin() + 20 * epoch + 20));
  }
}

TEST(RepeatTest, ReshufflesEachEpochDeterministically) {
  Dataset dataset = Range(20).Shuffle(20, 9).Repeat(3);
  StatusOr<std::vector<Element>> run = Collect(dataset);
  StatusOr<std::vector<Element>> again = Collect(dataset);
  ASSERT_TRUE(run.ok() && again.ok());
  const std::vector<int64_t> values = Scalars<int64_t>(*run);
  ASSERT_EQ(values.size(), 60u);
  EXPECT_EQ(values, Scalars<int64_t>(*again));
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 3; ++e) {
    epochs.emplace_back(values.begin() + 20 * e, values.begin() + 20 * (e + 1));
    EXPECT_EQ(Sorted(epochs.back()), Iota(20)) << "epoch " << e;
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
}

TEST(RepeatTest, CountsForeverAndEmpty) {
  StatusOr<std::vector<Element>> twice = Collect(Range(3).Repeat(2));
  ASSERT_TRUE(twice.ok());
  EXPECT_THAT(Scalars<int64_t>(*twice), ElementsAre(0, 1, 2, 0, 1, 2));
  StatusOr<std::vector<Element>> forever = Collect(Range(3).Repeat().Take(7));
  ASSERT_TRUE(forever.ok());
  EXPECT_THAT(Scalars<int64_t>(*forever), ElementsAre(0, 1, 2, 0, 1, 2, 0));
  StatusOr<std::vector<Element>> none = Collect(Range(3).Repeat(0));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  // An empty input ends Repeat(-1) instead of spinning.
  StatusOr<std::vector<Element>> empty = Collect(Range(0).Repeat());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_TRUE(IsInvalidArgument(Range(3).Repeat(-2).status()));
}

TEST(ShardTest, ShardsAreDisjointAndCoverEverything) {
  std::vector<int64_t> all;
  for (int64_t index = 0; index < 3; ++index) {
    StatusOr<std::vector<Element>> shard = Collect(Range(10).Shard(3, index));
    ASSERT_TRUE(shard.ok());
    for (int64_t value : Scalars<int64_t>(*shard)) {
      EXPECT_EQ(value % 3, index);
      all.push_back(value);
    }
  }
  EXPECT_EQ(Sorted(all), Iota(10));
  EXPECT_EQ(all.size(), 10u);  // disjoint: nothing twice
}

TEST(ShardTest, BadArgumentsAreInvalidArgument) {
  EXPECT_TRUE(IsInvalidArgument(Range(4).Shard(0, 0).status()));
  EXPECT_TRUE(IsInvalidArgument(Range(4).Shard(2, 2).status()));
  EXPECT_TRUE(IsInvalidArgument(Range(4).Shard(2, -1).status()));
  EXPECT_THAT(Range(4).Shard(2, 5).status().message(), HasSubstr("index 5"));
}

TEST(MapTest, AppliesFunctionAndReportsItsErrors) {
  auto fn = [](Element element) -> StatusOr<Element> {
    const int64_t value = element[0].flat<int64_t>()[0];
    if (value == 3) return InvalidArgument("three is not allowed");
    return Element{Tensor::Scalar<int64_t>(value * 10)};
  };
  StatusOr<std::vector<Element>> ok = Collect(Range(3).Map(fn));
  ASSERT_TRUE(ok.ok());
  EXPECT_THAT(Scalars<int64_t>(*ok), ElementsAre(0, 10, 20));

  StatusOr<std::unique_ptr<Iterator>> iterator = Range(5).Map(fn).MakeIterator();
  ASSERT_TRUE(iterator.ok());
  Element element;
  bool end = false;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*iterator)->GetNext(&element, &end).ok());
  Status error = (*iterator)->GetNext(&element, &end);
  EXPECT_TRUE(IsInvalidArgument(error));
  EXPECT_THAT(error.message(), HasSubstr("Map function on element 3"));
  EXPECT_THAT(error.message(), HasSubstr("three is not allowed"));
  // The error concerned one element; the next one follows.
  ASSERT_TRUE((*iterator)->GetNext(&element, &end).ok());
  EXPECT_FALSE(end);
  EXPECT_EQ(element[0].flat<int64_t>()[0], 40);
}

TEST(TakeTest, TakesAtMostCount) {
  StatusOr<std::vector<Element>> two = Collect(Range(5).Take(2));
  ASSERT_TRUE(two.ok());
  EXPECT_THAT(Scalars<int64_t>(*two), ElementsAre(0, 1));
  StatusOr<std::vector<Element>> all = Collect(Range(5).Take(-1));
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 5u);
  EXPECT_TRUE(IsInvalidArgument(Range(5).Take(-3).status()));
}

TEST(PipelineTest, LongPipelineIsDeterministic) {
  Tensor features(DataType::kFloat, TensorShape({64, 3}));
  for (int64_t i = 0; i < 64 * 3; ++i) features.flat<float>()[i] = static_cast<float>(i);
  Dataset pipeline = Dataset::FromTensors({features, Tensor::FromVector(Iota(64))})
                         .Shuffle(10, 1234)
                         .Map([](Element element) -> StatusOr<Element> {
                           Tensor doubled = element[0].DeepCopy();
                           for (float& v : doubled.flat<float>()) v *= 2;
                           return Element{doubled, element[1]};
                         })
                         .Batch(8)
                         .Prefetch(3);
  StatusOr<std::vector<Element>> first = Collect(pipeline);
  StatusOr<std::vector<Element>> second = Collect(pipeline);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_EQ(first->size(), 8u);
  std::vector<int64_t> labels;
  for (size_t b = 0; b < first->size(); ++b) {
    const Element& x = (*first)[b];
    const Element& y = (*second)[b];
    EXPECT_EQ(x[0].shape(), TensorShape({8, 3}));
    EXPECT_TRUE(std::equal(x[0].flat<float>().begin(), x[0].flat<float>().end(),
                           y[0].flat<float>().begin()));
    EXPECT_TRUE(std::equal(x[1].flat<int64_t>().begin(), x[1].flat<int64_t>().end(),
                           y[1].flat<int64_t>().begin()));
    for (int r = 0; r < 8; ++r) {
      const int64_t label = x[1].flat<int64_t>()[r];
      labels.push_back(label);
      EXPECT_EQ(x[0].flat<float>()[r * 3], 2.0f * static_cast<float>(label * 3));
    }
  }
  EXPECT_NE(labels, Iota(64));
  EXPECT_EQ(Sorted(labels), Iota(64));
}

}  // namespace
}  // namespace weft::data
