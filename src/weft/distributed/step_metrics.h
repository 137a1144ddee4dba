// The steps a task ran, for its metrics endpoint (core/metrics.h): weft_steps_total{role,code}
// and the latency histogram weft_step_seconds{role}. The role is "master" for a client's RunStep
// and "worker" for a partition's RunGraph. Thread-safe.
#pragma once

#include <chrono>
#include <string>

#include "weft/core/status.h"

namespace weft {

void RecordStep(const std::string& role, const Status& status,
                std::chrono::steady_clock::time_point started);

}  // namespace weft
