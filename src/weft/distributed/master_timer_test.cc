#include "weft/distributed/master_timer.h"

#include <atomic>

#include <gtest/gtest.h>

#include "weft/core/notification.h"

namespace weft {
namespace {

TEST(MasterTimerTest, RunsCallbacksInDeadlineOrder) {
  MasterTimer timer;
  std::mutex mu;
  std::vector<int> order;
  Notification both;
  timer.Schedule(60, [&] {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(2);
    both.Notify();
  });
  timer.Schedule(10, [&] {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(1);
  });
  ASSERT_TRUE(both.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
  std::lock_guard<std::mutex> lock(mu);
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

}  // namespace
}  // namespace weft
