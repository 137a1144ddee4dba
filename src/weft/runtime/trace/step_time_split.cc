#include "weft/runtime/trace/step_time_split.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace weft {
namespace {

using Intervals = std::vector<std::pair<int64_t, int64_t>>;

// Sorts and merges overlapping or touching intervals in place.
void Merge(Intervals* intervals) {
  std::sort(intervals->begin(), intervals->end());
  Intervals merged;
  for (const auto& [start, end] : *intervals) {
    if (!merged.empty() && start <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, end);
    } else {
      merged.emplace_back(start, end);
    }
  }
  *intervals = std::move(merged);
}

int64_t Length(const Intervals& merged) {
  int64_t total = 0;
  for (const auto& [start, end] : merged) total += end - start;
  return total;
}

// The length of the intersection of two merged (sorted, disjoint) lists.
int64_t IntersectionLength(const Intervals& a, const Intervals& b) {
  int64_t total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t start = std::max(a[i].first, b[j].first);
    const int64_t end = std::min(a[i].second, b[j].second);
    if (start < end) total += end - start;
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return total;
}

}  // namespace

int64_t EventStartNanos(const proto::NodeExecStats& event) {
  return event.all_start_nanos() != 0 ? event.all_start_nanos() : event.all_start_micros() * 1000;
}

int64_t EventEndNanos(const proto::NodeExecStats& event) {
  const int64_t duration =
      event.op_end_rel_nanos() != 0 ? event.op_end_rel_nanos() : event.op_end_rel_micros() * 1000;
  return EventStartNanos(event) + std::max<int64_t>(duration, 0);
}

StepTimeSplit SplitStepTime(const proto::StepStats& stats) {
  Intervals compute, communication;
  for (const proto::DeviceStepStats& device : stats.dev_stats()) {
    for (const proto::NodeExecStats& event : device.node_stats()) {
      const int64_t start = EventStartNanos(event);
      const int64_t end = EventEndNanos(event);
      if (end <= start) continue;
      switch (event.kind()) {
        case proto::NodeExecStats::COMPUTE:
          compute.emplace_back(start, end);
          break;
        case proto::NodeExecStats::SEND:
        case proto::NodeExecStats::RECV:
        case proto::NodeExecStats::RECV_TENSOR:
        case proto::NodeExecStats::COLLECTIVE:
          communication.emplace_back(start, end);
          break;
        default:  // RPC: the master's calls span the step
          break;
      }
    }
  }
  Merge(&compute);
  Merge(&communication);
  StepTimeSplit split;
  split.compute_nanos = Length(compute);
  split.communication_nanos = Length(communication);
  split.overlap_nanos = IntersectionLength(compute, communication);
  return split;
}

}  // namespace weft
