#include "weft/distributed/master_timer.h"

#include <atomic>

#include <gtest/gtest.h>

#include "weft/core/mutex.h"
#include "weft/core/notification.h"

namespace weft {
namespace {

TEST(MasterTimerTest, RunsCallbacksInDeadlineOrder) {
  MasterTimer timer;
  Mutex mu;
  std::vector<int> order;  // under mu
  Notification both;
  timer.Schedule(60, [&] {
    MutexLock lock(mu);
    order.push_back(2);
    both.Notify();
  });
  timer.Schedule(10, [&] {
    MutexLock lock(mu);
    order.push_back(1);
  });
  ASSERT_TRUE(both.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
  MutexLock lock(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(MasterTimerTest, CancelledCallbacksDoNotRun) {
  std::atomic<int> runs{0};
  {
    MasterTimer timer;
    int64_t id = timer.Schedule(50, [&] { ++runs; });
    EXPECT_TRUE(timer.Cancel(id));
    EXPECT_FALSE(timer.Cancel(id));
    Notification later;
    timer.Schedule(100, [&] { later.Notify(); });
    ASSERT_TRUE(later.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
    timer.Schedule(60'000, [&] { ++runs; });  // dropped by the destructor
  }
  EXPECT_EQ(runs, 0);
}

// Regression test for 172fe61: the timer's thread waited until a reference into the entry of the
// earliest deadline, so a Cancel that erased that entry while the thread waited left it reading
// freed memory when it woke (a heap-use-after-free under ASan). The hook makes the order certain:
// Cancel runs while the thread waits on the entry, then a Schedule wakes it.
TEST(MasterTimerTest, CancellingTheEntryTheTimerWaitsOnIsSafe) {
  MasterTimer timer;
  Notification waiting;
  timer.SetBeforeWaitHookForTesting([&] {
    if (!waiting.HasBeenNotified()) waiting.Notify();
  });
  std::atomic<int> runs{0};
  const int64_t id = timer.Schedule(60'000, [&] { ++runs; });
  ASSERT_TRUE(waiting.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
  // Takes the timer's lock, so it happens once the thread waits (the hook runs just before).
  EXPECT_TRUE(timer.Cancel(id));
  Notification woken;
  timer.Schedule(1, [&] { woken.Notify(); });
  ASSERT_TRUE(woken.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
  EXPECT_EQ(runs, 0);
}

}  // namespace
}  // namespace weft
