// StepBreakdown: where traced steps' time goes, from their step stats (RunOptions FULL_TRACE):
// per device, the time per step of each op type, the time some op of the device was running
// (overlapping ops merged) and the rest of the step's wall time, when the device ran nothing,
// split into before its first op (the session starting the step), between ops (waiting on
// another device, handing work between threads) and after its last op (the session finishing). An
// asynchronous op (a _Recv, a collective) counts from its start to its completion, its wait
// included. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "weft/step_stats.pb.h"

namespace weft {

class StepBreakdown {
 public:
  // Adds one step whose Run started and ended at these wall-clock times (nanoseconds since the
  // epoch, the clock of the stats' all_start_nanos).
  void AddStep(const proto::StepStats& stats, int64_t run_start_nanos, int64_t run_end_nanos);

  int64_t steps() const { return steps_; }
  // A table per device (the `top_ops` costliest op types, the rest summed), times per step.
  std::string ToString(int top_ops = 10) const;

 private:
  struct OpTotal {
    int64_t nanos = 0;
    int64_t count = 0;
  };
  struct DeviceTotal {
    int64_t busy_nanos = 0;
    int64_t before_first_op_nanos = 0;
    int64_t after_last_op_nanos = 0;
    std::map<std::string, OpTotal> ops;
  };

  int64_t steps_ = 0;
  int64_t wall_nanos_ = 0;
  std::map<std::string, DeviceTotal> devices_;
};

}  // namespace weft
