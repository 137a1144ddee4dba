// DirectSession: a Session that runs the graph in this process, on the devices its ConfigProto
// asks for (device_count; one CPU by default). Each distinct (feeds, fetches, targets) signature is
// pruned, placed, partitioned per device and turned into executors once and cached (see
// step_executors.h); Run then only checks the fed tensors and runs the cached executors with a
// fresh step id, so concurrent Runs share executors. A callable (MakeCallable) holds its prepared
// step, so RunCallable skips even the signature lookup. Every run goes through one asynchronous
// core that the blocking calls wait on. Thread-safe.
#pragma once

#include <memory>

#include "weft/runtime/session.h"

namespace weft {

StatusOr<std::unique_ptr<Session>> NewDirectSession(const SessionOptions& options);

}  // namespace weft
