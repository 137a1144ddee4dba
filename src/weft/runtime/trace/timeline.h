// Timeline: turns traced steps (their StepStats and the Run's start and end) into Chrome
// trace-event JSON, the format Perfetto (ui.perfetto.dev) and chrome://tracing open:
//  - one process per task (DeviceStepStats::task, "/job:worker/replica:0/task:1"), sorted by
//    name, and a first process "steps" with one event per traced step (its Run, with its
//    compute, communication and overlap times; step_time_split.h);
//  - in each task, one thread row per device for its kernels, and beside it rows for its
//    _Send/_Recv nodes, its RecvTensor calls and its collectives, and a row for the master's
//    RunGraph calls. Events of one row never overlap: concurrent ones (kernels on several
//    inter-op threads, waiting _Recvs) spill into numbered rows below it ("CPU:0 (2)");
//  - every event a complete event ("X") with ts and dur in microseconds (fractions keep the
//    nanoseconds) from the earliest traced moment, and args naming the node, op, step, bytes,
//    peers and rendezvous key;
//  - a flow ("s" to "f", one id, "bp":"e") from each _Send to the _Recv with its rendezvous key.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "weft/step_stats.pb.h"

namespace weft {

class Timeline {
 public:
  // Adds traced step `step` whose Run started and ended at these wall-clock times (nanoseconds
  // since the epoch, the clock of NodeExecStats::all_start_nanos).
  void AddStep(int64_t step, proto::StepStats stats, int64_t run_start_nanos,
               int64_t run_end_nanos);
  int64_t steps() const { return static_cast<int64_t>(steps_.size()); }

  // {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}; with no step, a trace
  // with no events.
  std::string ToJson() const;

 private:
  struct Step {
    int64_t step = 0;
    proto::StepStats stats;
    int64_t start_nanos = 0;
    int64_t end_nanos = 0;
  };
  std::vector<Step> steps_;
};

// Moves the devices of task `from` to task `to` (names and task fields): a worker of a
// multi-worker job runs its steps in a local session ("/job:localhost/replica:0/task:0") and is
// really "/job:worker/replica:0/task:<i>".
void RenameTask(std::string_view from, std::string_view to, proto::StepStats* stats);

}  // namespace weft
