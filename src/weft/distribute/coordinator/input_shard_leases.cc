#include "weft/distribute/coordinator/input_shard_leases.h"

#include <algorithm>

namespace weft::distribute {

InputShardLeases::InputShardLeases(int64_t num_shards)
    : num_shards_(std::max<int64_t>(num_shards, 0)), shards_(static_cast<size_t>(num_shards_)) {}

std::optional<InputShardLease> InputShardLeases::Acquire(int worker) {
  MutexLock lock(mu_);
  while (next_free_ < num_shards_ && shards_[next_free_].state != State::kFree) ++next_free_;
  if (next_free_ == num_shards_) return std::nullopt;
  return LeaseTo(next_free_, worker);
}

InputShardLease InputShardLeases::LeaseTo(int64_t index, int worker) {
  Shard& shard = shards_[static_cast<size_t>(index)];
  shard.state = State::kLeased;
  shard.worker = worker;
  if (shard.generation > 0) ++reissued_;
  return InputShardLease{index, shard.generation, worker};
}

int64_t InputShardLeases::AddShard() {
  MutexLock lock(mu_);
  shards_.emplace_back();
  return num_shards_++;
}

StatusOr<InputShardLease> InputShardLeases::AcquireShard(int64_t index, int worker) {
  MutexLock lock(mu_);
  if (index < 0 || index >= num_shards_) {
    return InvalidArgument("no input shard ", index, " (there are ", num_shards_, ")");
  }
  const Shard& shard = shards_[static_cast<size_t>(index)];
  if (shard.state == State::kConsumed) {
    return FailedPrecondition("input shard ", index, " is already consumed");
  }
  if (shard.state == State::kLeased) {
    return FailedPrecondition("input shard ", index, " is leased to worker ", shard.worker);
  }
  return LeaseTo(index, worker);
}

int64_t InputShardLeases::num_shards() const {
  MutexLock lock(mu_);
  return num_shards_;
}

bool InputShardLeases::IsCurrent(const InputShardLease& lease) const {
  if (lease.shard < 0 || lease.shard >= num_shards_) return false;
  const Shard& shard = shards_[lease.shard];
  return shard.state == State::kLeased && shard.generation == lease.generation &&
         shard.worker == lease.worker;
}

Status InputShardLeases::Complete(const InputShardLease& lease) {
  MutexLock lock(mu_);
  if (!IsCurrent(lease)) {
    return FailedPrecondition(
        "input shard ", lease.shard, " (lease ", lease.generation, " to worker ", lease.worker,
        ") is no longer this worker's: it was taken back or already consumed, "
        "so this completion is not counted");
  }
  shards_[lease.shard].state = State::kConsumed;
  ++consumed_;
  return Status::OK();
}

void InputShardLeases::Abandon(const InputShardLease& lease) {
  MutexLock lock(mu_);
  if (!IsCurrent(lease)) return;
  Shard& shard = shards_[lease.shard];
  shard.state = State::kFree;
  shard.worker = -1;
  ++shard.generation;
  next_free_ = std::min(next_free_, lease.shard);
}

std::vector<int64_t> InputShardLeases::ReleaseWorker(int worker) {
  MutexLock lock(mu_);
  std::vector<int64_t> released;
  for (int64_t i = 0; i < num_shards_; ++i) {
    Shard& shard = shards_[i];
    if (shard.state != State::kLeased || shard.worker != worker) continue;
    shard.state = State::kFree;
    shard.worker = -1;
    ++shard.generation;
    released.push_back(i);
    next_free_ = std::min(next_free_, i);
  }
  return released;
}

int64_t InputShardLeases::consumed() const {
  MutexLock lock(mu_);
  return consumed_;
}

int64_t InputShardLeases::reissued() const {
  MutexLock lock(mu_);
  return reissued_;
}

bool InputShardLeases::AllConsumed() const {
  MutexLock lock(mu_);
  return consumed_ == num_shards_;
}

}  // namespace weft::distribute
