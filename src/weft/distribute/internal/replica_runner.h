// The engine behind Strategy::Run: one thread per replica, taking turns to build the graph, with
// MergeCall as the point where every replica pauses and one merge function runs for all of them.
// Private to the distribute layer.
#pragma once

#include <chrono>
#include <vector>

#include "weft/distribute/strategy.h"

namespace weft::distribute::internal {

// Calls fn once per replica of `strategy` (see Strategy::Run) and returns each replica's outputs,
// indexed by replica. Every wait is bounded by `timeout`: a replica that neither pauses nor
// finishes in time fails the call with DeadlineExceeded (its thread is then left to finish on its
// own and must not outlive what fn uses).
StatusOr<std::vector<std::vector<Output>>> RunReplicas(const Strategy& strategy, const Scope& scope,
                                                       const Strategy::ReplicaFn& fn,
                                                       std::chrono::milliseconds timeout);

}  // namespace weft::distribute::internal
