// When a step's rendezvous on a worker may be dropped without waiting for the master's
// CleanupGraph: a worker whose partitions _Send nothing to another task has no value a peer could
// still RecvTensor once its RunGraph has returned. Master and worker decide it from the same
// registration, so the master skips the CleanupGraph exactly where the worker cleans up itself
// (after a successful step; failed steps always get CleanupGraph). Saves one RPC per worker and
// step on graphs without cross-task edges. A pure function; thread-safe.
#pragma once

#include <string_view>

#include "weft/worker.pb.h"

namespace weft {

bool SendsToOtherTasks(const proto::RegisterGraphRequest& registration, std::string_view task);

}  // namespace weft
