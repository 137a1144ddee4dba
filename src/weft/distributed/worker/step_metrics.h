// The steps a task ran, for its metrics endpoint (core/metrics.h): weft_steps_total{role,code}
// and the latency histogram weft_step_seconds{role}. The role is "master" for a client's RunStep
// and "worker" for a partition's RunGraph. Thread-safe.
#pragma once

#include <string>

#include "weft/distributed/worker/worker_interface.h"

namespace weft {

// `done`, which first counts the step under `role` with its outcome and its time from now.
StatusCallback CountedStep(std::string role, StatusCallback done);

}  // namespace weft
