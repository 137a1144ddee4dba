#include "weft/distribute/coordinator/cluster_coordinator.h"

#include <atomic>
#include <chrono>

#include <gtest/gtest.h>

#include "weft/core/mutex.h"
#include "weft/core/notification.h"

namespace weft::distribute {
namespace {

FunctionResult Value(float x) { return std::vector<Tensor>{Tensor::Scalar(x)}; }

TEST(ClusterCoordinatorTest, RunsEveryFunctionOnceAndFetchesItsResult) {
  ClusterCoordinator coordinator(2);
  std::vector<RemoteValue> values;
  for (int i = 0; i < 50; ++i) {
    values.push_back(coordinator.Schedule([i](int) { return Value(static_cast<float>(i)); }));
  }
  EXPECT_TRUE(coordinator.Join().ok());
  EXPECT_TRUE(coordinator.Done());
  for (int i = 0; i < 50; ++i) {
    FunctionResult result = values[i].Fetch();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ((*result)[0].data<float>()[0], static_cast<float>(i));
    EXPECT_EQ(values[i].attempts(), 1);
    EXPECT_TRUE(values[i].worker() == 0 || values[i].worker() == 1);
  }
}

TEST(ClusterCoordinatorTest, SchedulesTensOfThousandsOfEmptyFunctionsASecondInProcess) {
  ClusterCoordinator coordinator(2);
  const int count = 20'000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) coordinator.Schedule([](int) { return Value(0); });
  ASSERT_TRUE(coordinator.Join().ok());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d empty functions in %.3f s: %.0f/s\n", count, seconds, count / seconds);
  EXPECT_TRUE(coordinator.Done());
}

// Worker 1 is lost while running its first function; it recovers once the test says so. Every
// function still runs to completion, the lost one on another worker (or on 1 after recovery).
// Worker 0's functions wait (bounded) until worker 1 has tried one, so that worker 1 gets one.
TEST(ClusterCoordinatorTest, ALostWorkersFunctionRunsElsewhereAndTheWorkerRejoins) {
  Notification may_recover, tried_on_1;
  std::atomic<bool> lost{true};
  std::atomic<int> rescheduled_from_1{0};
  ClusterCoordinatorOptions options;
  options.worker_names = {"/job:worker/task:0", "/job:worker/task:1"};
  options.recover_worker = [&](int worker) {
    if (worker == 1) {
      may_recover.WaitForNotification();
      lost = false;
    }
    return Status::OK();
  };
  options.on_rescheduled = [&](int worker, int64_t, const Status& why) {
    if (worker == 1 && IsUnavailable(why)) rescheduled_from_1.fetch_add(1);
  };
  ClusterCoordinator coordinator(2, options);
  std::atomic<int> ran_on_0{0};
  std::vector<RemoteValue> values;
  for (int i = 0; i < 40; ++i) {
    values.push_back(coordinator.Schedule([&, i](int worker) -> FunctionResult {
      if (worker == 1 && lost) {
        tried_on_1.Notify();
        return Unavailable("task 1 is gone");
      }
      if (worker == 0) {
        EXPECT_TRUE(tried_on_1.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
        if (ran_on_0.fetch_add(1) == 20) may_recover.Notify();
      }
      return Value(static_cast<float>(i));
    }));
  }
  ASSERT_TRUE(coordinator.Join().ok());
  EXPECT_EQ(rescheduled_from_1.load(), 1);
  EXPECT_EQ(coordinator.rescheduled(), 1);
  int retried = 0;
  for (int i = 0; i < 40; ++i) {
    FunctionResult result = values[i].Fetch();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ((*result)[0].data<float>()[0], static_cast<float>(i));
    retried += values[i].attempts() - 1;
  }
  EXPECT_EQ(retried, 1);
  EXPECT_TRUE(coordinator.retired_workers().empty());
}

TEST(ClusterCoordinatorTest, AFunctionErrorCancelsTheQueueAndIsJoinsResultOnce) {
  ClusterCoordinator coordinator(1);
  Notification release;
  RemoteValue first = coordinator.Schedule([&](int) -> FunctionResult {
    release.WaitForNotification();
    return InvalidArgument("bad batch");
  });
  RemoteValue queued = coordinator.Schedule([](int) { return Value(1); });
  release.Notify();
  Status joined = coordinator.Join();
  EXPECT_TRUE(IsInvalidArgument(joined)) << joined;
  EXPECT_TRUE(IsInvalidArgument(first.Fetch().status()));
  EXPECT_TRUE(IsCancelled(queued.Fetch().status())) << queued.Fetch().status();
  EXPECT_NE(queued.Fetch().status().message().find("bad batch"), std::string::npos);
  // The error is reported once; scheduling works again afterwards.
  RemoteValue after = coordinator.Schedule([](int) { return Value(2); });
  EXPECT_TRUE(coordinator.Join().ok());
  EXPECT_TRUE(after.Fetch().ok());
}

TEST(ClusterCoordinatorTest, AWorkerThatCannotRecoverIsRetiredAndTheOthersCarryOn) {
  ClusterCoordinatorOptions options;
  options.recover_worker = [](int worker) {
    return worker == 1 ? Unavailable("task 1 did not come back") : Status::OK();
  };
  Notification retired;
  options.on_retired = [&](int worker, const Status& why) {
    EXPECT_EQ(worker, 1);
    EXPECT_NE(why.message().find("did not come back"), std::string::npos) << why;
    retired.Notify();
  };
  ClusterCoordinator coordinator(2, options);
  Notification tried_on_1;
  std::vector<RemoteValue> values;
  for (int i = 0; i < 20; ++i) {
    values.push_back(coordinator.Schedule([&](int worker) -> FunctionResult {
      if (worker == 1) {
        tried_on_1.Notify();
        return Unavailable("task 1 is gone");
      }
      EXPECT_TRUE(tried_on_1.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
      return Value(0);
    }));
  }
  ASSERT_TRUE(coordinator.Join().ok());
  for (const RemoteValue& value : values) EXPECT_TRUE(value.Fetch().ok());
  // Join may return before the lost worker's recovery has failed: the functions ran elsewhere.
  ASSERT_TRUE(retired.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
  EXPECT_EQ(coordinator.retired_workers(), std::vector<int>{1});
}

TEST(ClusterCoordinatorTest, LosingEveryWorkerFailsJoinNamingThem) {
  ClusterCoordinatorOptions options;
  options.worker_names = {"/job:worker/task:0", "/job:worker/task:1"};
  ClusterCoordinator coordinator(2, options);  // no recovery: a lost worker is retired
  RemoteValue value =
      coordinator.Schedule([](int) -> FunctionResult { return Unavailable("connection refused"); });
  Status joined = coordinator.Join();
  EXPECT_TRUE(IsUnavailable(joined)) << joined;
  EXPECT_NE(joined.message().find("every worker is lost (/job:worker/task:0, /job:worker/task:1)"),
            std::string::npos)
      << joined;
  EXPECT_FALSE(value.Fetch().ok());
  EXPECT_TRUE(IsUnavailable(coordinator.Schedule([](int) { return Value(0); }).Fetch().status()));
}

// Three functions at once on each worker: every one of them runs (the first six meet, which only
// happens when three run on each worker together), and when all three of worker 1's are lost
// together the worker is recovered once, not three times.
TEST(ClusterCoordinatorTest, SeveralFunctionsInFlightPerWorkerRecoverTheWorkerOnce) {
  std::atomic<int> recoveries{0};
  std::atomic<bool> lost{true};
  ClusterCoordinatorOptions options;
  options.functions_in_flight_per_worker = 3;
  options.recover_worker = [&](int worker) {
    EXPECT_EQ(worker, 1);
    recoveries.fetch_add(1);
    lost = false;
    return Status::OK();
  };
  ClusterCoordinator coordinator(2, options);
  Mutex mu;
  CondVar arrived_cv;
  int arrived = 0;  // guarded by mu: first attempts of the first six functions
  std::vector<std::atomic<bool>> started(60);
  std::vector<RemoteValue> values;
  for (int i = 0; i < 60; ++i) {
    values.push_back(coordinator.Schedule([&, i](int worker) -> FunctionResult {
      if (i < 6 && !started[i].exchange(true)) {
        // Decided before meeting the others: all of worker 1's first six are lost together.
        const bool fail = worker == 1 && lost;
        MutexLock lock(mu);
        ++arrived;
        arrived_cv.NotifyAll();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (arrived < 6 && std::chrono::steady_clock::now() < deadline) {
          arrived_cv.WaitUntil(lock, deadline);
        }
        EXPECT_EQ(arrived, 6) << "function " << i << " did not meet the others";
        if (fail) return Unavailable("task 1 is gone");
      }
      return Value(static_cast<float>(i));
    }));
  }
  ASSERT_TRUE(coordinator.Join().ok());
  EXPECT_EQ(recoveries.load(), 1);
  EXPECT_EQ(coordinator.rescheduled(), 3);
  for (int i = 0; i < 60; ++i) {
    FunctionResult result = values[i].Fetch();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ((*result)[0].data<float>()[0], static_cast<float>(i));
  }
}

}  // namespace
}  // namespace weft::distribute
