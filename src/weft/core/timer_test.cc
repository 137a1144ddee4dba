#include "weft/core/timer.h"

#include <atomic>
#include <chrono>
#include <memory>

#include <gtest/gtest.h>

#include "weft/core/mutex.h"
#include "weft/core/notification.h"

namespace weft {
namespace {

TEST(TimerTest, RunsCallbacksInDeadlineOrder) {
  Timer timer;
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

TEST(TimerTest, CancelledCallbacksDoNotRun) {
  std::atomic<int> runs{0};
  {
    Timer timer;
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
// A callback's captures may own something that calls the timer when it goes (a session whose
// liveness cancels its next round): the timer destroys callbacks outside its lock, whether they
// ran, were cancelled or were still pending when the timer went away.
struct UsesTheTimerWhenDestroyed {
  UsesTheTimerWhenDestroyed(Timer* timer, Notification* destroyed)
      : timer(timer), destroyed(destroyed) {}
  ~UsesTheTimerWhenDestroyed() {
    timer->Cancel(timer->Schedule(60'000, [] {}));
    destroyed->Notify();
  }
  Timer* const timer;
  Notification* const destroyed;
};

TEST(TimerTest, CallbacksAreDestroyedOutsideTheLockAfterRunning) {
  Timer timer;
  Notification ran, destroyed;
  auto state = std::make_shared<UsesTheTimerWhenDestroyed>(&timer, &destroyed);
  timer.Schedule(1, [state, &ran] { ran.Notify(); });
  state.reset();
  ASSERT_TRUE(ran.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
  EXPECT_TRUE(destroyed.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
}

TEST(TimerTest, CallbacksAreDestroyedOutsideTheLockWhenCancelledOrDropped) {
  Notification cancelled_destroyed, dropped_destroyed;
  {
    Timer timer;
    auto cancelled = std::make_shared<UsesTheTimerWhenDestroyed>(&timer, &cancelled_destroyed);
    const int64_t id = timer.Schedule(60'000, [cancelled] {});
    cancelled.reset();
    EXPECT_TRUE(timer.Cancel(id));
    EXPECT_TRUE(cancelled_destroyed.HasBeenNotified());
    auto dropped = std::make_shared<UsesTheTimerWhenDestroyed>(&timer, &dropped_destroyed);
    timer.Schedule(60'000, [dropped] {});
  }
  EXPECT_TRUE(dropped_destroyed.HasBeenNotified());
}

TEST(TimerTest, CancellingTheEntryTheTimerWaitsOnIsSafe) {
  Timer timer;
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
