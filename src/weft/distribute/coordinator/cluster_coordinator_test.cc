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

// A per-worker resource is made on every worker at once, and again on worker 1 after it was lost
// and recovered, before worker 1 runs another function: each function sees its worker's resource.
// Worker 0's later functions wait (bounded) until worker 1 was lost and ran one after its
// recovery, so that it is and does.
TEST(ClusterCoordinatorTest, APerWorkerResourceIsMadeAgainOnARecoveredWorkerBeforeItRunsMore) {
  Mutex mu;
  std::vector<int> made = {0, 0};  // guarded by mu; per worker: times the resource was made
  std::atomic<bool> lost{false};
  Notification lost_once, ran_after_recovery;
  ClusterCoordinatorOptions options;
  options.recover_worker = [&](int) {
    lost = false;
    return Status::OK();
  };
  ClusterCoordinator coordinator(2, options);
  ASSERT_TRUE(coordinator
                  .CreatePerWorkerResource([&](int worker) {
                    MutexLock lock(mu);
                    ++made[worker];
                    return Status::OK();
                  })
                  .ok());
  {
    MutexLock lock(mu);
    EXPECT_EQ(made, (std::vector<int>{1, 1}));
  }
  std::vector<RemoteValue> values;
  for (int i = 0; i < 30; ++i) {
    values.push_back(coordinator.Schedule([&, i](int worker) -> FunctionResult {
      if (worker == 1 && i >= 10 && !lost_once.HasBeenNotified()) {
        lost = true;
        lost_once.Notify();
        return Unavailable("task 1 restarted");
      }
      if (worker == 0 && i >= 10) {
        EXPECT_TRUE(ran_after_recovery.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
      }
      MutexLock lock(mu);
      // A function never runs on a worker whose resource was lost and not yet made again.
      EXPECT_FALSE(worker == 1 && lost);
      if (worker == 1 && lost_once.HasBeenNotified() && !ran_after_recovery.HasBeenNotified()) {
        ran_after_recovery.Notify();
      }
      return Value(static_cast<float>(made[worker]));
    }));
  }
  ASSERT_TRUE(coordinator.Join().ok());
  ASSERT_TRUE(lost_once.HasBeenNotified());
  MutexLock lock(mu);
  EXPECT_EQ(made, (std::vector<int>{1, 2}));
  EXPECT_EQ(coordinator.resources_recreated(), 1);
}

TEST(ClusterCoordinatorTest, PerWorkerResourceErrorsNameTheWorkerAndRetireItOnRecovery) {
  ClusterCoordinatorOptions options;
  options.worker_names = {"/job:worker/task:0", "/job:worker/task:1"};
  options.recover_worker = [](int) { return Status::OK(); };
  std::atomic<int> retired{-1};
  Notification retired_note;
  options.on_retired = [&](int worker, const Status& why) {
    EXPECT_NE(why.message().find("making per-worker resource 0 again on /job:worker/task:1: bad"),
              std::string::npos)
        << why.message();
    retired = worker;
    retired_note.Notify();
  };
  ClusterCoordinator coordinator(2, options);
  Status refused = coordinator.CreatePerWorkerResource(
      [](int worker) { return worker == 1 ? NotFound("no such file") : Status::OK(); });
  EXPECT_EQ(refused.code(), Code::kNotFound);
  EXPECT_NE(refused.message().find("on /job:worker/task:1: no such file"), std::string::npos)
      << refused.message();

  // Worker 1 is lost once; making its resource again fails for good: it is retired, and its
  // function runs on worker 0. Worker 0's functions wait (bounded) for that, so worker 1 gets one.
  std::atomic<bool> failed_once{false};
  ClusterCoordinator second(2, options);
  std::atomic<int> makes_on_1{0};
  ASSERT_TRUE(second
                  .CreatePerWorkerResource([&](int worker) {
                    if (worker == 1 && makes_on_1.fetch_add(1) > 0) {
                      return InvalidArgument("bad dataset");
                    }
                    return Status::OK();
                  })
                  .ok());
  std::vector<RemoteValue> values;
  for (int i = 0; i < 2; ++i) {
    values.push_back(second.Schedule([&](int worker) -> FunctionResult {
      if (worker == 1 && !failed_once.exchange(true)) return Unavailable("task 1 restarted");
      EXPECT_TRUE(retired_note.WaitForNotificationWithTimeout(std::chrono::seconds(10)));
      return Value(static_cast<float>(worker));
    }));
  }
  ASSERT_TRUE(second.Join().ok());
  for (const RemoteValue& value : values) {
    ASSERT_TRUE(value.Fetch().ok());
    EXPECT_EQ(value.worker(), 0);
  }
  EXPECT_EQ(retired.load(), 1);
  EXPECT_EQ(second.retired_workers(), (std::vector<int>{1}));
}

}  // namespace
}  // namespace weft::distribute
