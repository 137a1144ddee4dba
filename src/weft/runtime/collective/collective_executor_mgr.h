// CollectiveExecutorMgrInterface: where a session gets each step's CollectiveExecutor. A session
// without one gives every step a LocalCollectiveExecutor (the members are devices of this
// process); a process whose collectives span tasks (MultiWorkerMirroredStrategy) passes one whose
// executors also reach the other processes. Implementations are thread-safe and outlive the
// sessions that use them.
#pragma once

#include <cstdint>
#include <memory>

#include "weft/framework/collective.h"

namespace weft {

class CollectiveExecutorMgrInterface {
 public:
  virtual ~CollectiveExecutorMgrInterface() = default;
  // The executor of step `step_id`, owned by the step and destroyed when it ends.
  virtual std::unique_ptr<CollectiveExecutor> NewStepExecutor(int64_t step_id) = 0;
};

}  // namespace weft
