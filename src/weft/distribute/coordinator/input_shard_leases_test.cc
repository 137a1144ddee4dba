#include "weft/distribute/coordinator/input_shard_leases.h"

#include <atomic>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace weft::distribute {
namespace {

using ::testing::HasSubstr;

TEST(InputShardLeasesTest, LeasesInOrderAndConsumesOnCompletion) {
  InputShardLeases leases(3);
  auto a = leases.Acquire(0), b = leases.Acquire(1);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->shard, 0);
  EXPECT_EQ(b->shard, 1);
  EXPECT_TRUE(leases.Complete(*b).ok());
  auto c = leases.Acquire(1);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->shard, 2);
  EXPECT_FALSE(leases.Acquire(2));  // 0 and 2 are out on leases, 1 is consumed
  EXPECT_TRUE(leases.Complete(*a).ok());
  EXPECT_TRUE(leases.Complete(*c).ok());
  EXPECT_TRUE(leases.AllConsumed());
  EXPECT_EQ(leases.consumed(), 3);
  EXPECT_EQ(leases.reissued(), 0);
}

TEST(InputShardLeasesTest, ADeadWorkersShardsAreLeasedAgainAndItsLateCompletionIsRefused) {
  InputShardLeases leases(4);
  auto dead0 = leases.Acquire(0), alive = leases.Acquire(1), dead1 = leases.Acquire(0);
  ASSERT_TRUE(dead0 && alive && dead1);
  EXPECT_EQ(leases.ReleaseWorker(0), (std::vector<int64_t>{0, 2}));
  auto again = leases.Acquire(1);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->shard, 0);
  EXPECT_EQ(again->generation, 1);
  // Worker 0 was presumed dead but finishes anyway: not counted.
  Status late = leases.Complete(*dead0);
  EXPECT_TRUE(IsFailedPrecondition(late)) << late;
  EXPECT_NE(late.message().find("input shard 0 (lease 0 to worker 0) is no longer"),
            std::string::npos)
      << late;
  EXPECT_TRUE(leases.Complete(*again).ok());
  EXPECT_FALSE(leases.Complete(*again).ok());  // a second completion is refused too
  EXPECT_EQ(leases.reissued(), 1);
}

TEST(InputShardLeasesTest, AnAbandonedLeaseReturnsItsShard) {
  InputShardLeases leases(2);
  auto first = leases.Acquire(0);
  ASSERT_TRUE(first);
  leases.Abandon(*first);
  leases.Abandon(*first);  // stale now: ignored
  auto retried = leases.Acquire(1);
  ASSERT_TRUE(retried);
  EXPECT_EQ(retried->shard, 0);
  EXPECT_EQ(retried->worker, 1);
  EXPECT_FALSE(leases.Complete(*first).ok());
}

// Four workers consume 2,000 shards while a fifth thread takes every worker's leases back in
// turn (as the coordinator does when it loses a worker): every shard is counted exactly once.
TEST(InputShardLeasesTest, EveryShardIsConsumedExactlyOnceWhileWorkersAreLost) {
  constexpr int kShards = 2000, kWorkers = 4;
  InputShardLeases leases(kShards);
  std::vector<std::atomic<int>> counted(kShards);
  std::atomic<int> completions{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      // Bounded: each shard can be leased at most a few times more than once.
      for (int attempt = 0; attempt < 20 * kShards && !leases.AllConsumed(); ++attempt) {
        std::optional<InputShardLease> lease = leases.Acquire(w);
        if (!lease) {
          std::this_thread::yield();
          continue;
        }
        if (leases.Complete(*lease).ok()) counted[lease->shard].fetch_add(1);
        completions.fetch_add(1);
      }
    });
  }
  std::thread loser([&] {
    for (int round = 0; round < 200 && !leases.AllConsumed(); ++round) {
      leases.ReleaseWorker(round % kWorkers);
      std::this_thread::yield();
    }
  });
  for (std::thread& worker : workers) worker.join();
  loser.join();
  EXPECT_TRUE(leases.AllConsumed());
  for (int s = 0; s < kShards; ++s) EXPECT_EQ(counted[s].load(), 1) << "shard " << s;
  EXPECT_EQ(leases.consumed(), kShards);
}

// Fit's use: a shard added per scheduled step as its batches are read, leased by number to the
// worker that runs the step; a failed step's lease returns and the same shard is leased again.
TEST(InputShardLeasesTest, ShardsAddedAsReadAreLeasedByNumber) {
  InputShardLeases leases(0);
  EXPECT_EQ(leases.AddShard(), 0);
  EXPECT_EQ(leases.AddShard(), 1);
  EXPECT_EQ(leases.num_shards(), 2);
  StatusOr<InputShardLease> first = leases.AcquireShard(1, /*worker=*/0);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->shard, 1);
  // Out on a lease: not leased twice.
  Status twice = leases.AcquireShard(1, 1).status();
  EXPECT_EQ(twice.code(), Code::kFailedPrecondition);
  EXPECT_THAT(twice.message(), HasSubstr("input shard 1 is leased to worker 0"));
  leases.Abandon(*first);
  StatusOr<InputShardLease> again = leases.AcquireShard(1, 1);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->generation, 1);
  EXPECT_EQ(leases.reissued(), 1);
  ASSERT_TRUE(leases.Complete(*again).ok());
  EXPECT_THAT(leases.AcquireShard(1, 0).status().message(), HasSubstr("already consumed"));
  EXPECT_THAT(leases.AcquireShard(2, 0).status().message(), HasSubstr("no input shard 2"));
  EXPECT_FALSE(leases.AllConsumed());
  ASSERT_TRUE(leases.Complete(leases.AcquireShard(0, 0).value()).ok());
  EXPECT_TRUE(leases.AllConsumed());
}

}  // namespace
}  // namespace weft::distribute
