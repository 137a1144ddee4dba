#include "weft/core/thread_pool.h"

#include <atomic>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/notification.h"

namespace weft {
namespace {

TEST(ThreadPoolTest, RunsEveryScheduledClosure) {
  std::atomic<int> count{0};
  {
    ThreadPool pool("test", 3);
    for (int i = 0; i < 1000; ++i) pool.Schedule([&] { count.fetch_add(1); });
  }  // the destructor drains the queue
  EXPECT_EQ(count.load(), 1000);
}

TEST(ThreadPoolTest, ParallelForCoversTheRangeExactlyOnce) {
  ThreadPool pool("test", 2);
  for (int64_t total : {1, 7, 1000, 100000}) {
    std::vector<std::atomic<int>> hits(total);
    pool.ParallelFor(total, 1000, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
    });
    for (int64_t i = 0; i < total; ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
  }
}

TEST(ThreadPoolTest, CurrentThreadIndexIsKnownOnlyInsideThePool) {
  ThreadPool pool("test", 2);
  EXPECT_EQ(pool.CurrentThreadIndex(), -1);
  std::atomic<int> seen{-2};
  Notification done;
  pool.Schedule([&] {
    seen = pool.CurrentThreadIndex();
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_GE(seen.load(), 0);
  EXPECT_LT(seen.load(), 2);
}

}  // namespace
}  // namespace weft
