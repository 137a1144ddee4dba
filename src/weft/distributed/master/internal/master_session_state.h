// The state MasterSession shares between its set-up (master_session.cc) and its steps
// (master_session_step.cc): a signature's registered graphs and one step in flight. Private to
// the master session; thread-safety as noted per field.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/notification.h"
#include "weft/distributed/master/master_session.h"

namespace weft {

// The graphs of one signature, registered on every task that runs part of it. Built once: the
// first caller builds, concurrent callers wait on `ready` and share `status`.
struct MasterSession::RegisteredGraph {
  StepSignature signature;  // sorted, so that orderings of one set share the registration
  Notification ready;
  Status status;
  ClientGraph client_graph;
  std::vector<std::string> graph_handles;  // per client_graph.tasks
};

// One RunStep in flight. Shared with the RunGraph callbacks, the deadline, the liveness probes and
// the client's cancel callback; whichever reports first (all RunGraphs done, deadline, a silent
// worker, client cancel) answers the client, and `response` is never touched after that.
struct MasterSession::Step {
  struct TaskCall {
    CallOptions options;
    proto::RunGraphRequest request;
    proto::RunGraphResponse response;
    Status status;
    // A traced step's RunGraph call: when it went out and when it answered (StepStatsNowNanos).
    int64_t start_nanos = 0;
    int64_t end_nanos = 0;
  };

  std::shared_ptr<RegisteredGraph> graph;
  CallOptions* client_options = nullptr;
  const proto::RunStepRequest* request = nullptr;
  proto::RunStepResponse* response = nullptr;
  StatusCallback done;
  int64_t step_id = 0;
  int64_t timeout_ms = 0;
  std::vector<std::unique_ptr<TaskCall>> calls;  // per graph->client_graph.tasks

  Mutex mu;
  size_t pending WEFT_GUARDED_BY(mu) = 0;
  bool cancelled WEFT_GUARDED_BY(mu) = false;  // the RunGraphs were told to stop
  bool reported WEFT_GUARDED_BY(mu) = false;
  int64_t timer_id WEFT_GUARDED_BY(mu) = 0;
  Status first_root WEFT_GUARDED_BY(mu);  // first non-derived error
  Status first_derived WEFT_GUARDED_BY(mu);
};

}  // namespace weft
