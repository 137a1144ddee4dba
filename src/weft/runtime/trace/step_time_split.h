// SplitStepTime: how much of one traced step computed, how much communicated, and how much of
// the two overlapped. Each is a union of time intervals over every device of every task (wall
// clock, so across machines it is only as good as their clocks agree):
//   compute       = the union of the COMPUTE events (kernels doing arithmetic or bookkeeping);
//   communication = the union of SEND, RECV, RECV_TENSOR and COLLECTIVE events (a _Recv and a
//                   collective count from their start to their completion, waiting included);
//   overlap       = the time in both unions.
// The master's RunGraph calls (RPC events) span the whole step and count in neither. A pure
// function; thread-safe.
#pragma once

#include <cstdint>

#include "weft/step_stats.pb.h"

namespace weft {

struct StepTimeSplit {
  int64_t compute_nanos = 0;
  int64_t communication_nanos = 0;
  int64_t overlap_nanos = 0;
};

StepTimeSplit SplitStepTime(const proto::StepStats& stats);

// An event's start and end in wall-clock nanoseconds (from the nanosecond fields when set,
// else from the microsecond ones).
int64_t EventStartNanos(const proto::NodeExecStats& event);
int64_t EventEndNanos(const proto::NodeExecStats& event);

}  // namespace weft
