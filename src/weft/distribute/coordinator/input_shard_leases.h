// InputShardLeases: the bookkeeping behind exactly-once input under a ClusterCoordinator. An
// epoch's input is cut into numbered shards; a worker takes a shard as a lease, and the shard
// counts as consumed only when the function that read it completes. A dead worker's leases, and a
// failed function's, return to the pool and are leased again; a completion that arrives for a lease
// that was taken back (the worker was presumed dead but finished) is refused, so each shard is
// consumed by exactly one completion. Shards are numbered up front (the constructor) or as the
// input is read (AddShard: Model::Fit reads its batches on the coordinator, and each scheduled step
// leases the shard of its own batches, AcquireShard). Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/status.h"
#include "weft/core/statusor.h"

namespace weft::distribute {

struct InputShardLease {
  int64_t shard = -1;
  int64_t generation = 0;  // how many times this shard was leased before this lease
  int worker = -1;
};

class InputShardLeases {
 public:
  explicit InputShardLeases(int64_t num_shards);

  // The lowest-numbered shard that is neither consumed nor leased, now leased to `worker`;
  // nullopt when every shard is consumed or out on a lease.
  std::optional<InputShardLease> Acquire(int worker) WEFT_EXCLUDES(mu_);
  // A new free shard after the others; returns its number.
  int64_t AddShard() WEFT_EXCLUDES(mu_);
  // Leases shard `shard` to `worker`; FailedPrecondition naming it when it is consumed or out on
  // another lease, InvalidArgument when there is no such shard.
  StatusOr<InputShardLease> AcquireShard(int64_t shard, int worker) WEFT_EXCLUDES(mu_);
  // The function that read `lease`'s shard completed: OK and the shard is consumed, or
  // FailedPrecondition naming the shard when the lease is no longer current (taken back from its
  // worker and leased again, or the shard already consumed): drop that function's results.
  Status Complete(const InputShardLease& lease) WEFT_EXCLUDES(mu_);
  // The function failed or will be retried elsewhere: the shard returns to the pool (a stale lease
  // is ignored).
  void Abandon(const InputShardLease& lease) WEFT_EXCLUDES(mu_);
  // `worker` is gone: every shard it holds returns to the pool. Returns those shards.
  std::vector<int64_t> ReleaseWorker(int worker) WEFT_EXCLUDES(mu_);

  int64_t num_shards() const WEFT_EXCLUDES(mu_);
  int64_t consumed() const WEFT_EXCLUDES(mu_);
  // Leases handed out again after being taken back (a measure of work repeated).
  int64_t reissued() const WEFT_EXCLUDES(mu_);
  bool AllConsumed() const WEFT_EXCLUDES(mu_);

 private:
  enum class State { kFree, kLeased, kConsumed };
  struct Shard {
    State state = State::kFree;
    int64_t generation = 0;  // of the current or next lease
    int worker = -1;
  };

  bool IsCurrent(const InputShardLease& lease) const WEFT_REQUIRES(mu_);
  InputShardLease LeaseTo(int64_t shard, int worker) WEFT_REQUIRES(mu_);

  mutable Mutex mu_;
  int64_t num_shards_ WEFT_GUARDED_BY(mu_);
  std::vector<Shard> shards_ WEFT_GUARDED_BY(mu_);
  int64_t next_free_ WEFT_GUARDED_BY(mu_) = 0;  // no free shard below it
  int64_t consumed_ WEFT_GUARDED_BY(mu_) = 0;
  int64_t reissued_ WEFT_GUARDED_BY(mu_) = 0;
};

}  // namespace weft::distribute
