// ElasticMembership (see the header): the rule that forms each generation and its deadlines.
#include "weft/distributed/cluster/elastic_membership.h"

#include <algorithm>
#include <utility>

#include "weft/core/str_util.h"

namespace weft {
namespace {

int64_t UnixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Contains(const std::vector<int>& workers, int worker) {
  return std::find(workers.begin(), workers.end(), worker) != workers.end();
}

}  // namespace

ElasticMembership::ElasticMembership(Options options) : options_(std::move(options)) {
  MutexLock lock(mu_);
  // Generation 0 is the launch itself: the first generation waits for all of its workers.
  for (int w = 0; w < options_.num_workers; ++w) members_.push_back(w);
}

void ElasticMembership::WorkerStarted(int worker) {
  MutexLock lock(mu_);
  evicted_.erase(worker);
  changed_.NotifyAll();
}

void ElasticMembership::WorkerExited(int worker) {
  MutexLock lock(mu_);
  waiting_.erase(worker);
  if (waiting_.empty()) waiting_since_.reset();
  if (Contains(members_, worker) && !Contains(lost_, worker)) {
    lost_.push_back(worker);
    if (member_lost_at_unix_ms_ == 0) member_lost_at_unix_ms_ = UnixMillisNow();
  }
  UpdateLocked();
  changed_.NotifyAll();
}

void ElasticMembership::WorkerFinished(int /*worker*/) {
  MutexLock lock(mu_);
  finished_ = true;
  changed_.NotifyAll();
}

int64_t ElasticMembership::generation() const {
  MutexLock lock(mu_);
  return generation_;
}

int64_t ElasticMembership::membership_changes() const {
  MutexLock lock(mu_);
  return membership_changes_;
}

void ElasticMembership::Shutdown() {
  MutexLock lock(mu_);
  shut_down_ = true;
  changed_.NotifyAll();
}

std::vector<int> ElasticMembership::NotJoinedLocked() const {
  std::vector<int> missing;
  for (int worker : members_) {
    if (!waiting_.contains(worker) && !Contains(lost_, worker) && !evicted_.contains(worker)) {
      missing.push_back(worker);
    }
  }
  return missing;
}

bool ElasticMembership::PendingLocked(int64_t generation) const {
  return generation != generation_ || !lost_.empty() || !waiting_.empty();
}

std::optional<ElasticMembership::Clock::time_point> ElasticMembership::NextDeadlineLocked() const {
  if (!waiting_since_) return std::nullopt;
  if (!NotJoinedLocked().empty()) {
    return *waiting_since_ +
           (generation_ == 0 ? options_.first_join_timeout : options_.join_timeout);
  }
  return *waiting_since_ + options_.min_workers_timeout;
}

void ElasticMembership::UpdateLocked() {
  if (waiting_.empty() || !failure_.ok()) return;
  const std::vector<int> not_joined = NotJoinedLocked();
  const std::optional<Clock::time_point> deadline = NextDeadlineLocked();
  const bool late = deadline && Clock::now() >= *deadline;
  if (not_joined.empty()) {
    if (static_cast<int>(waiting_.size()) >= options_.min_workers) {
      FormLocked();
    } else if (late) {
      std::vector<int> missing;
      for (int w = 0; w < options_.num_workers; ++w) {
        if (!waiting_.contains(w)) missing.push_back(w);
      }
      failure_ = DeadlineExceeded(
          "elastic membership: only ", waiting_.size(), " worker(s) of ", options_.num_workers,
          " remain, fewer than --min-workers ", options_.min_workers, ", after waiting ",
          options_.min_workers_timeout.count(), " ms; missing: worker ", StrJoin(missing, ", "));
    }
    return;
  }
  if (!late) return;
  // Members that did not come to the step boundary in time are taken to be hung: evicted (killed
  // by the launcher), and the generation forms without them.
  for (int worker : not_joined) {
    evicted_.insert(worker);
    if (member_lost_at_unix_ms_ == 0) member_lost_at_unix_ms_ = UnixMillisNow();
    if (options_.evict) options_.evict(worker);
  }
  UpdateLocked();
}

void ElasticMembership::FormLocked() {
  std::vector<JoinRequest> joined;
  for (auto& [worker, request] : waiting_) joined.push_back(request);
  const std::vector<int> previous = members_;
  const int num_workers = options_.num_workers;
  auto previous_rank = [&previous, num_workers](int worker) {
    auto it = std::find(previous.begin(), previous.end(), worker);
    return it == previous.end() ? static_cast<int64_t>(num_workers) + worker
                                : static_cast<int64_t>(it - previous.begin());
  };
  // Rank 0 holds the most advanced state, the others keep their order (joining workers last).
  std::sort(joined.begin(), joined.end(), [&](const JoinRequest& a, const JoinRequest& b) {
    if (a.has_state != b.has_state) return a.has_state;
    if (a.position.global_step != b.position.global_step) {
      return a.position.global_step > b.position.global_step;
    }
    return previous_rank(a.worker) < previous_rank(b.worker);
  });
  ElasticGeneration generation;
  generation.number = ++generation_;
  generation.resume = joined[0].has_state;
  generation.position = joined[0].position;
  for (const JoinRequest& request : joined) {
    generation.workers.push_back(request.worker);
    generation.addresses.push_back(request.address);
    if (!request.has_state) continue;
    const int64_t reached = request.position.global_step + (request.failed_step ? 1 : 0);
    generation.steps_recomputed =
        std::max(generation.steps_recomputed, reached - generation.position.global_step);
  }
  generation.member_lost_at_unix_ms = member_lost_at_unix_ms_;
  // A member lost and back (restarted before the others re-formed) both left and joined.
  std::set<int> gone(lost_.begin(), lost_.end());
  gone.insert(evicted_.begin(), evicted_.end());
  for (int worker : previous) {
    if (gone.contains(worker) || !Contains(generation.workers, worker)) ++membership_changes_;
  }
  for (int worker : generation.workers) {
    if (gone.contains(worker) || !Contains(previous, worker)) ++membership_changes_;
  }
  generation.membership_changes = membership_changes_;
  members_ = generation.workers;
  lost_.clear();
  member_lost_at_unix_ms_ = 0;
  for (size_t rank = 0; rank < joined.size(); ++rank) {
    generation.rank = static_cast<int>(rank);
    formed_[joined[rank].worker] = generation;
  }
  waiting_.clear();
  waiting_since_.reset();
  changed_.NotifyAll();
}

StatusOr<ElasticGeneration> ElasticMembership::Join(const JoinRequest& request) {
  if (request.worker < 0 || request.worker >= options_.num_workers) {
    return InvalidArgument("elastic membership: worker ", request.worker,
                           " is not one of the launch's ", options_.num_workers, " workers");
  }
  MutexLock lock(mu_);
  formed_.erase(request.worker);
  waiting_[request.worker] = request;
  if (!waiting_since_) waiting_since_ = Clock::now();
  changed_.NotifyAll();
  while (true) {
    UpdateLocked();
    if (auto it = formed_.find(request.worker); it != formed_.end()) {
      ElasticGeneration generation = std::move(it->second);
      formed_.erase(it);
      return generation;
    }
    if (finished_) {
      waiting_.erase(request.worker);
      ElasticGeneration over;
      over.finished = true;
      return over;
    }
    if (!failure_.ok()) return failure_;
    if (shut_down_) return Unavailable("elastic membership: the launcher is shutting down");
    if (!waiting_.contains(request.worker)) {
      return Unavailable("elastic membership: worker ", request.worker,
                         " exited while it waited to join");
    }
    const std::optional<Clock::time_point> deadline = NextDeadlineLocked();
    if (deadline) {
      changed_.WaitUntil(lock, *deadline);
    } else {
      changed_.Wait(lock);
    }
  }
}

bool ElasticMembership::WaitUntilWaiting(int worker, std::chrono::milliseconds timeout) {
  const Clock::time_point until = Clock::now() + timeout;
  MutexLock lock(mu_);
  while (!waiting_.contains(worker) && Clock::now() < until) changed_.WaitUntil(lock, until);
  return waiting_.contains(worker);
}

MembershipChange ElasticMembership::Watch(int64_t generation, std::chrono::milliseconds timeout) {
  const Clock::time_point until = Clock::now() + timeout;
  MutexLock lock(mu_);
  while (!PendingLocked(generation) && !shut_down_ && Clock::now() < until) {
    changed_.WaitUntil(lock, until);
  }
  MembershipChange change;
  change.pending = PendingLocked(generation);
  if (generation == generation_) change.lost = lost_;
  return change;
}

}  // namespace weft
