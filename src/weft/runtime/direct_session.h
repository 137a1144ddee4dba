// DirectSession: a Session that runs the graph in this process. Each distinct (feeds, fetches,
// targets) signature is pruned, checked and turned into an executor once and cached; Run then only
// checks the fed tensors and runs the cached executor with a fresh step id, so concurrent Runs
// share executors. Thread-safe.
#pragma once

#include <memory>

#include "weft/runtime/session.h"

namespace weft {

StatusOr<std::unique_ptr<Session>> NewDirectSession(const SessionOptions& options);

}  // namespace weft
