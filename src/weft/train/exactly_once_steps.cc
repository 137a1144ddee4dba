#include "weft/train/exactly_once_steps.h"

#include <utility>

#include "weft/core/logging.h"

namespace weft::train {

StatusOr<std::vector<Tensor>> ExactlyOnceSteps::Run(Session& worker_session,
                                                    WorkerSessions& sessions,
                                                    const NamedTensorList& feeds,
                                                    const std::vector<std::string>& fetches,
                                                    const std::vector<std::string>& targets) {
  const int64_t commit_id = next_commit_id_.fetch_add(1);
  NamedTensorList step_feeds = feeds;
  step_feeds.emplace_back(staged_.commit_id, Tensor::Scalar<int64_t>(commit_id));
  std::vector<Tensor> outputs;
  Status step = worker_session.Run(step_feeds, fetches, targets, &outputs);
  if (!step.ok()) {
    // What some ps tasks staged before the step failed is dropped; the step itself is run again
    // (with a new commit id) wherever the coordinator puts it.
    Status discarded = Finish(sessions, commit_id, /*commit=*/false);
    if (!discarded.ok()) {
      WEFT_LOG(WARNING) << "could not discard the staged updates of failed step " << commit_id
                        << " (the ps tasks drop the oldest ones themselves): " << discarded;
    }
    return step;
  }
  Status committed = Finish(sessions, commit_id, /*commit=*/true);
  if (!committed.ok()) {
    lost_commits_.fetch_add(1);
    WEFT_LOG(WARNING) << "the commit of step " << commit_id
                      << " failed; its updates on the ps tasks it did not reach are lost: "
                      << committed;
  }
  return outputs;
}

Status ExactlyOnceSteps::Finish(WorkerSessions& sessions, int64_t commit_id, bool commit) const {
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, sessions.PsSession());
  NamedTensorList feeds;
  std::vector<std::string> targets;
  for (const distribute::StagedUpdateGroup& group : staged_.groups) {
    feeds.emplace_back(group.commit_id, Tensor::Scalar<int64_t>(commit_id));
    targets.push_back(commit ? group.commit : group.discard);
  }
  std::vector<Tensor> none;
  Status finished = session->Run(feeds, {}, targets, &none);
  if (!finished.ok()) sessions.ResetPsSession(session);
  return finished;
}

}  // namespace weft::train
