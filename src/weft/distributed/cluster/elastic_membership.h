// ElasticMembership: who trains in an elastic multi-worker job, generation by generation. The
// launcher (`weft launch --elastic`) holds it and tells it which worker processes are alive; every
// worker asks it to Join before each generation and Watches it while training. A generation forms
// once every live member of the previous one (and whoever else waits) has asked to join, with at
// least `min_workers`: its members are ranked so that rank 0 holds the most advanced state (the
// one all others receive by broadcast), then the previous ranks' order. A live member that does not
// ask within the join timeout is evicted (the launcher kills it); below `min_workers` the waiting
// workers are told, after a deadline, which workers are missing.
// Thread-safe: the launcher's thread reports processes while connection threads block in Join and
// Watch.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"

namespace weft {

// Where a worker's training stands: the global steps completed, and the batch of the epoch after
// them (the same on every member: each draws the same global batches).
struct ElasticPosition {
  int64_t global_step = 0;
  int64_t epoch = 0;
  int64_t batch_index = 0;
};

struct JoinRequest {
  int worker = 0;          // the worker's index in the launch: stable across its restarts
  std::string address;     // where its server listens ("127.0.0.1:40001")
  bool has_state = false;  // it trained: its variables and optimizer state are those of `position`
  ElasticPosition position;
  bool failed_step = false;  // its last step failed and will be run again
};

struct ElasticGeneration {
  // The job is over (a member finished its training): there is nothing to join; the other fields
  // are unset.
  bool finished = false;
  int64_t number = 0;                  // 1 for the first
  std::vector<int> workers;            // the members' launch indices, by rank
  std::vector<std::string> addresses;  // their servers, by rank
  int rank = 0;                        // the asker's
  // Rank 0 holds trained state (broadcast to the others at the start) and `position` is where
  // training continues; false: training starts afresh (or from a checkpoint).
  bool resume = false;
  ElasticPosition position;
  // Steps some member began or finished that training goes back over (a failed step, run again).
  int64_t steps_recomputed = 0;
  // Workers that left (lost, evicted) and joined (new, or back after a restart) since the launch,
  // over every generation up to this one.
  int64_t membership_changes = 0;
  // When the loss of a member that led to this generation was seen, in ms since the Unix epoch (0:
  // no member was lost: the first generation, or one formed for a joining worker).
  int64_t member_lost_at_unix_ms = 0;
};

// What Watch saw.
struct MembershipChange {
  bool pending = false;   // the generation is to be re-formed
  std::vector<int> lost;  // its members that exited since it formed
};

class ElasticMembership {
 public:
  struct Options {
    int num_workers = 1;  // the launch's workers, indices 0..num_workers-1
    int min_workers = 1;
    // How long a live member of the previous generation may take to ask to join once another has
    // (it is evicted after that), and the same for the first generation's workers to start.
    std::chrono::milliseconds join_timeout{10000};
    std::chrono::milliseconds first_join_timeout{60000};
    // How long workers wait for at least min_workers before they are told who is missing.
    std::chrono::milliseconds min_workers_timeout{60000};
    // Evicts a worker that did not ask to join in time (the launcher kills its process).
    std::function<void(int worker)> evict;
  };
  explicit ElasticMembership(Options options);

  // The launcher's reports: a worker's process started (again), or exited.
  void WorkerStarted(int worker) WEFT_EXCLUDES(mu_);
  void WorkerExited(int worker) WEFT_EXCLUDES(mu_);
  // A worker finished training (exited with 0): workers waiting to join, and any that ask later,
  // are told the job is over.
  void WorkerFinished(int worker) WEFT_EXCLUDES(mu_);

  // Blocks until a generation that includes the asker forms; InvalidArgument for a worker outside
  // the launch, DeadlineExceeded naming the missing workers when fewer than min_workers remain past
  // the deadline, Unavailable once shut down (or when the asker exits meanwhile).
  StatusOr<ElasticGeneration> Join(const JoinRequest& request) WEFT_EXCLUDES(mu_);
  // Blocks until generation `generation` has to re-form (a member exited, another worker waits to
  // join, or a newer one formed) or `timeout` passes (pending false).
  MembershipChange Watch(int64_t generation, std::chrono::milliseconds timeout) WEFT_EXCLUDES(mu_);
  // Wakes every blocked call, which then fails. Idempotent.
  void Shutdown() WEFT_EXCLUDES(mu_);

  int64_t generation() const WEFT_EXCLUDES(mu_);
  // Blocks until `worker` waits at the step boundary (its Join called and not yet answered) or
  // `timeout` passes; whether it waits. For whoever must order other joins after it (tests).
  bool WaitUntilWaiting(int worker, std::chrono::milliseconds timeout) WEFT_EXCLUDES(mu_);
  // Workers that left and joined since the launch (ElasticGeneration::membership_changes).
  int64_t membership_changes() const WEFT_EXCLUDES(mu_);

 private:
  using Clock = std::chrono::steady_clock;
  // Forms the next generation when it can, evicts the members that were too slow to ask, and fails
  // the waiting workers once the min_workers deadline passed.
  void UpdateLocked() WEFT_REQUIRES(mu_);
  void FormLocked() WEFT_REQUIRES(mu_);
  // The members of the current generation that are alive and have not asked to join.
  std::vector<int> NotJoinedLocked() const WEFT_REQUIRES(mu_);
  bool PendingLocked(int64_t generation) const WEFT_REQUIRES(mu_);
  // When the next update is due (a join or min_workers deadline), if any.
  std::optional<Clock::time_point> NextDeadlineLocked() const WEFT_REQUIRES(mu_);

  const Options options_;
  mutable Mutex mu_;
  CondVar changed_;
  std::set<int> evicted_ WEFT_GUARDED_BY(mu_);     // killed; not waited for
  std::vector<int> members_ WEFT_GUARDED_BY(mu_);  // of the current generation, by rank
  std::vector<int> lost_ WEFT_GUARDED_BY(mu_);     // its members that exited
  int64_t generation_ WEFT_GUARDED_BY(mu_) = 0;
  int64_t membership_changes_ WEFT_GUARDED_BY(mu_) = 0;
  std::map<int, JoinRequest> waiting_ WEFT_GUARDED_BY(mu_);
  std::optional<Clock::time_point> waiting_since_ WEFT_GUARDED_BY(mu_);  // the first asker's
  int64_t member_lost_at_unix_ms_ WEFT_GUARDED_BY(mu_) = 0;
  // The generation each worker was given, and the error the waiting workers are given instead.
  std::map<int, ElasticGeneration> formed_ WEFT_GUARDED_BY(mu_);
  Status failure_ WEFT_GUARDED_BY(mu_);
  bool shut_down_ WEFT_GUARDED_BY(mu_) = false;
  bool finished_ WEFT_GUARDED_BY(mu_) = false;
};

}  // namespace weft
