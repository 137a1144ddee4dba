// CollectiveExecutorMgrInterface: where a session gets each step's CollectiveExecutor. A session
// without one gives every step a LocalCollectiveExecutor (the members are devices of this
// process); a process whose collectives span tasks (MultiWorkerMirroredStrategy) passes one whose
// executors also reach the other processes. Implementations are thread-safe and outlive the
// sessions that use them.
#pragma once

#include <cstdint>
#include <memory>

#include "weft/framework/collective.h"
#include "weft/runtime/trace/step_stats_collector.h"

namespace weft {

class CollectiveExecutorMgrInterface {
 public:
  virtual ~CollectiveExecutorMgrInterface() = default;
  // The executor of step `step_id`, owned by the step and destroyed when it ends. With `stats`
  // (a traced step; it outlives the executor) each operation across processes is recorded there.
  virtual std::unique_ptr<CollectiveExecutor> NewStepExecutor(int64_t step_id,
                                                              StepStatsCollector* stats) = 0;
};

}  // namespace weft
