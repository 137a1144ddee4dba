// DirectSession: a Session that runs the graph in this process, on the devices its ConfigProto
// asks for (device_count; one CPU by default). Each distinct (feeds, fetches, targets) signature is
// pruned, placed, partitioned per device and turned into executors once and cached (see
// step_executors.h); Run then only checks the fed tensors and runs the cached executors with a
// fresh step id, so concurrent Runs share executors. Thread-safe.
#pragma once

#include <memory>

#include "weft/runtime/session.h"

namespace weft {

StatusOr<std::unique_ptr<Session>> NewDirectSession(const SessionOptions& options);

}  // namespace weft
