// RemoteRendezvous: the Rendezvous of one step on one worker task. Sends always stay local (the
// receiver pulls); a Recv whose source device is on another task becomes a RecvTensor call to that
// task's worker, cancelled when the step aborts. RendezvousMgr maps step ids to these rendezvous
// so that RunGraph and a peer's RecvTensor of one step meet, whichever comes first. In a traced
// step each RecvTensor call is recorded (its time, bytes, peer and key). Both classes are
// thread-safe; callbacks run outside their locks.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"
#include "weft/distributed/worker/worker_cache.h"
#include "weft/framework/rendezvous.h"
#include "weft/runtime/local_rendezvous.h"
#include "weft/runtime/trace/step_stats_collector.h"

namespace weft {

class RemoteRendezvous final : public Rendezvous,
                               public std::enable_shared_from_this<RemoteRendezvous> {
 public:
  explicit RemoteRendezvous(int64_t step_id);
  ~RemoteRendezvous() override;
  RemoteRendezvous(const RemoteRendezvous&) = delete;
  RemoteRendezvous& operator=(const RemoteRendezvous&) = delete;

  // Binds the rendezvous to its task and the peers it pulls from (`worker_cache` is not owned,
  // may be null for a cluster of one task, and must outlive the step). Needed before Send and
  // RecvAsync, not before RecvLocalAsync (a peer's RecvTensor may come before the step starts
  // here). Initializing again for the same task is a no-op; for another task it is Internal.
  Status Initialize(WorkerCacheInterface* worker_cache, std::string task_name);
  // Records every later RecvTensor call of this step in `stats` (a traced step; null stops).
  void SetStepStats(std::shared_ptr<StepStatsCollector> stats);

  Status Send(const ParsedKey& key, const Args& send_args, const Tensor& value,
              bool is_dead) override;
  void RecvAsync(const ParsedKey& key, const Args& recv_args, DoneCallback done) override;
  // Waits for a Send of this task only: what a peer's RecvTensor uses.
  void RecvLocalAsync(const ParsedKey& key, const Args& recv_args, DoneCallback done);
  // Aborts the local part and cancels every RecvTensor call in flight.
  void StartAbort(const Status& status) override;

  int64_t step_id() const { return step_id_; }

 private:
  struct RemoteCall;

  void RecvFromRemoteAsync(const ParsedKey& key, const Args& recv_args,
                           WorkerCacheInterface* worker_cache, DoneCallback done);

  const int64_t step_id_;
  LocalRendezvous local_;
  Mutex mu_;
  bool initialized_ WEFT_GUARDED_BY(mu_) = false;
  std::string task_name_ WEFT_GUARDED_BY(mu_);
  WorkerCacheInterface* worker_cache_ WEFT_GUARDED_BY(mu_) = nullptr;
  Status abort_status_ WEFT_GUARDED_BY(mu_);
  int64_t next_call_id_ WEFT_GUARDED_BY(mu_) = 0;
  std::map<int64_t, std::shared_ptr<RemoteCall>> calls_ WEFT_GUARDED_BY(mu_);
  std::shared_ptr<StepStatsCollector> stats_ WEFT_GUARDED_BY(mu_);
};

class RendezvousMgr {
 public:
  // `max_cleaned_up_steps`: how many cleaned-up step ids are remembered.
  explicit RendezvousMgr(size_t max_cleaned_up_steps = 10000);
  ~RendezvousMgr();
  RendezvousMgr(const RendezvousMgr&) = delete;
  RendezvousMgr& operator=(const RendezvousMgr&) = delete;

  // The rendezvous of `step_id`, created on first use. Aborted for a step cleaned up recently:
  // re-creating its rendezvous would leave one that nobody cleans up.
  StatusOr<std::shared_ptr<RemoteRendezvous>> FindOrCreate(int64_t step_id);
  // Aborts the step's rendezvous with Aborted("step <id> was cleaned up") and forgets it.
  void Cleanup(int64_t step_id);
  // Aborts every rendezvous with `status` and forgets them all.
  void CleanupAll(const Status& status);

 private:
  const size_t max_cleaned_up_steps_;
  Mutex mu_;
  std::map<int64_t, std::shared_ptr<RemoteRendezvous>> table_ WEFT_GUARDED_BY(mu_);
  // Oldest first; the set mirrors it for lookups.
  std::deque<int64_t> cleaned_up_order_ WEFT_GUARDED_BY(mu_);
  std::set<int64_t> cleaned_up_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft
