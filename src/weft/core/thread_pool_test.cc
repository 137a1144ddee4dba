#include "weft/core/thread_pool.h"

#include <atomic>
#include <chrono>
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

TEST(ThreadPoolTest, SpinningPoolRunsEveryClosureAndCoversParallelRanges) {
  std::atomic<int> count{0};
  {
    ThreadPool pool("spinning", 2, /*spin_micros=*/500);
    for (int round = 0; round < 50; ++round) {
      pool.Schedule([&] { count.fetch_add(1); });
      std::vector<std::atomic<int>> hits(1000);
      pool.ParallelFor(1000, 100'000, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
      });
      for (int i = 0; i < 1000; ++i) ASSERT_EQ(hits[i].load(), 1) << "round " << round;
    }
  }
  EXPECT_EQ(count.load(), 50);
}

TEST(ThreadPoolTest, ParallelForHonoursMaxShards) {
  ThreadPool pool("test", 3);
  for (int max_shards : {1, 2}) {
    std::atomic<int> shards{0};
    pool.ParallelFor(
        100, 1'000'000, [&](int64_t, int64_t) { shards.fetch_add(1); }, max_shards);
    EXPECT_EQ(shards.load(), max_shards);
  }
}

TEST(ThreadPoolTest, ParallelForFromAWorkerRunsInline) {
  // With one worker, shards queued behind the caller would never run if it waited for them.
  ThreadPool pool("single", 1, /*spin_micros=*/100);
  std::atomic<int64_t> covered{0};
  Notification done;
  pool.Schedule([&] {
    pool.ParallelFor(1000, 1'000'000,
                     [&](int64_t begin, int64_t end) { covered.fetch_add(end - begin); });
    done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
  EXPECT_EQ(covered.load(), 1000);
}

}  // namespace
}  // namespace weft
