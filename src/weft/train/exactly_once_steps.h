// ExactlyOnceSteps: how Model::Fit runs a training step under ParameterServerStrategy with
// CompileOptions::exactly_once_input. The step's graph stages its variable updates on the ps tasks
// (distribute/staged_updates.h); Run feeds it a fresh commit id, runs it in the worker's session
// and, once it succeeded, commits it in a run in the session of the ps tasks alone (so the worker
// may die meanwhile, and no worker's recovery cancels it half done); a step that failed is
// discarded there instead and is the coordinator's to run again. Each step's updates are thus
// applied once or not at all. Thread-safe: the coordinator's worker threads call Run at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/distribute/staged_updates.h"
#include "weft/runtime/session.h"
#include "weft/train/worker_sessions.h"

namespace weft::train {

class ExactlyOnceSteps {
 public:
  explicit ExactlyOnceSteps(distribute::StagedUpdates staged) : staged_(std::move(staged)) {}

  // Runs the step (`feeds`, `fetches`, `targets`) in `worker_session` and commits it through
  // `sessions.PsSession()` (made again after a commit failed there). The step's error
  // when it failed (it was discarded). A commit that fails (a ps task lost on the way: its updates
  // go with it, as any since its last snapshot) is logged and counted in lost_commits(); the
  // step's outputs are returned all the same, since rerunning it would apply it twice elsewhere.
  StatusOr<std::vector<Tensor>> Run(Session& worker_session, WorkerSessions& sessions,
                                    const NamedTensorList& feeds,
                                    const std::vector<std::string>& fetches,
                                    const std::vector<std::string>& targets);

  int64_t lost_commits() const { return lost_commits_.load(); }

 private:
  // Runs every ps task's commit (or discard) target for `commit_id` in one run of the ps tasks'
  // session; a failed run drops that session, for the next run to make a new one.
  Status Finish(WorkerSessions& sessions, int64_t commit_id, bool commit) const;

  const distribute::StagedUpdates staged_;
  std::atomic<int64_t> next_commit_id_{1};
  std::atomic<int64_t> lost_commits_{0};
};

}  // namespace weft::train
