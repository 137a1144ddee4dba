#include <atomic>
#include <memory>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/notification.h"
#include "weft/data/dataset.h"
#include "weft/data/testing/data_test_util.h"

namespace weft::data {
namespace {

using testing::Collect;
using testing::Range;

using ::testing::HasSubstr;

TEST(PrefetchTest, SameSequenceAsWithout) {
  Dataset base = Range(50).Shuffle(8, 5).Batch(4);
  for (int64_t buffer : {1, 2, 16}) {
    StatusOr<std::vector<Element>> plain = Collect(base);
    StatusOr<std::vector<Element>> prefetched = Collect(base.Prefetch(buffer));
    ASSERT_TRUE(plain.ok() && prefetched.ok());
    ASSERT_EQ(plain->size(), prefetched->size());
    for (size_t i = 0; i < plain->size(); ++i) {
      const auto a = (*plain)[i][0].flat<int64_t>();
      const auto b = (*prefetched)[i][0].flat<int64_t>();
      EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << "batch " << i;
    }
  }
}

TEST(PrefetchTest, ErrorsArriveInOrderAndIterationContinues) {
  Dataset dataset = Range(6)
                        .Map([](Element element) -> StatusOr<Element> {
                          if (element[0].flat<int64_t>()[0] % 3 == 2) return DataLoss("bad row");
                          return element;
                        })
                        .Prefetch(2);
  StatusOr<std::unique_ptr<Iterator>> iterator = dataset.MakeIterator();
  ASSERT_TRUE(iterator.ok());
  // 0, 1, error, 3, 4, error, end.
  for (int i = 0; i < 6; ++i) {
    Element element;
    bool end = false;
    Status status = (*iterator)->GetNext(&element, &end);
    EXPECT_FALSE(end);
    if (i % 3 == 2) {
      EXPECT_TRUE(IsDataLoss(status)) << i;
      EXPECT_THAT(status.message(), HasSubstr("bad row"));
    } else {
      ASSERT_TRUE(status.ok()) << status;
      EXPECT_EQ(element[0].flat<int64_t>()[0], i);
    }
  }
  for (int i = 0; i < 2; ++i) {
    Element element;
    bool end = false;
    ASSERT_TRUE((*iterator)->GetNext(&element, &end).ok());
    EXPECT_TRUE(end);
  }
}

TEST(PrefetchTest, DestroyedMidStreamWhileQueueIsFullJoins) {
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  Dataset dataset = Range(1000)
                        .Map([calls](Element element) -> StatusOr<Element> {
                          calls->fetch_add(1);
                          return element;
                        })
                        .Prefetch(2);
  {
    StatusOr<std::unique_ptr<Iterator>> iterator = dataset.MakeIterator();
    ASSERT_TRUE(iterator.ok());
    for (int i = 0; i < 3; ++i) {
      Element element;
      bool end = false;
      ASSERT_TRUE((*iterator)->GetNext(&element, &end).ok());
      EXPECT_EQ(element[0].flat<int64_t>()[0], i);
    }
  }  // the producer is blocked on the full queue; the destructor must wake and join it
  const int64_t after = calls->load();
  // Bounded read-ahead: consumed 3, queue holds at most 2, one more may have been in flight.
  EXPECT_LE(after, 3 + 2 + 1);
  EXPECT_EQ(calls->load(), after);  // joined: nothing runs any more
}

TEST(PrefetchTest, DestroyedWhileProducerIsInsideInput) {
  auto entered = std::make_shared<Notification>();
  auto release = std::make_shared<Notification>();
  Dataset dataset = Range(100)
                        .Map([entered, release](Element element) -> StatusOr<Element> {
                          if (element[0].flat<int64_t>()[0] == 1) {
                            entered->Notify();
                            release->WaitForNotification();
                          }
                          return element;
                        })
                        .Prefetch(4);
  StatusOr<std::unique_ptr<Iterator>> iterator = dataset.MakeIterator();
  ASSERT_TRUE(iterator.ok());
  Element element;
  bool end = false;
  ASSERT_TRUE((*iterator)->GetNext(&element, &end).ok());
  entered->WaitForNotification();
  // The producer is inside (or just leaving) the input call when the destructor runs; it must
  // finish that call, see the cancellation and be joined.
  release->Notify();
  iterator->reset();
  SUCCEED();
}

TEST(PrefetchTest, BadBufferSize) {
  EXPECT_TRUE(IsInvalidArgument(Range(3).Prefetch(0).MakeIterator().status()));
}

TEST(PrefetchTest, ManyIteratorsOfOneDatasetInParallel) {
  Dataset dataset = Range(200).Shuffle(32, 77).Prefetch(4);
  StatusOr<std::vector<Element>> reference = Collect(dataset);
  ASSERT_TRUE(reference.ok());
  std::vector<std::unique_ptr<Iterator>> iterators;
  for (int i = 0; i < 4; ++i) {
    StatusOr<std::unique_ptr<Iterator>> iterator = dataset.MakeIterator();
    ASSERT_TRUE(iterator.ok());
    iterators.push_back(std::move(iterator).value());
  }
  // Interleave the consumers: each still sees the reference order.
  for (size_t n = 0; n < reference->size(); ++n) {
    for (auto& iterator : iterators) {
      Element element;
      bool end = false;
      ASSERT_TRUE(iterator->GetNext(&element, &end).ok());
      ASSERT_FALSE(end);
      EXPECT_EQ(element[0].flat<int64_t>()[0], (*reference)[n][0].flat<int64_t>()[0]);
    }
  }
}

}  // namespace
}  // namespace weft::data
