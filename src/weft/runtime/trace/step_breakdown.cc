// See step_breakdown.h.
#include "weft/runtime/trace/step_breakdown.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "weft/core/str_util.h"

namespace weft {
namespace {

std::string Milliseconds(double nanos) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f ms", nanos / 1e6);
  return text;
}

std::string Percent(double part, double whole) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.0f%%", whole > 0 ? 100 * part / whole : 0.0);
  return text;
}

// The op's [start, end) in wall nanoseconds.
std::pair<int64_t, int64_t> Interval(const proto::NodeExecStats& node) {
  return {node.all_start_nanos(), node.all_start_nanos() + node.op_end_rel_nanos()};
}

}  // namespace

void StepBreakdown::AddStep(const proto::StepStats& stats, int64_t run_start_nanos,
                            int64_t run_end_nanos) {
  ++steps_;
  wall_nanos_ += run_end_nanos - run_start_nanos;
  for (const proto::DeviceStepStats& device : stats.dev_stats()) {
    DeviceTotal& total = devices_[device.device()];
    std::vector<std::pair<int64_t, int64_t>> intervals;
    for (const proto::NodeExecStats& node : device.node_stats()) {
      const auto interval = Interval(node);
      OpTotal& op = total.ops[node.op()];
      op.nanos += interval.second - interval.first;
      ++op.count;
      intervals.push_back(interval);
    }
    if (intervals.empty()) continue;
    // The union of the ops' intervals: ops on several inter-op threads may overlap.
    std::sort(intervals.begin(), intervals.end());
    total.before_first_op_nanos += std::max<int64_t>(0, intervals.front().first - run_start_nanos);
    int64_t last_end = 0;
    for (const auto& interval : intervals) last_end = std::max(last_end, interval.second);
    total.after_last_op_nanos += std::max<int64_t>(0, run_end_nanos - last_end);
    int64_t covered_end = INT64_MIN;
    for (const auto& [start, end] : intervals) {
      const int64_t from = std::max(start, covered_end);
      if (end > from) total.busy_nanos += end - from;
      covered_end = std::max(covered_end, end);
    }
  }
}

std::string StepBreakdown::ToString(int top_ops) const {
  if (steps_ == 0) return "no traced steps\n";
  const double steps = static_cast<double>(steps_);
  const double wall = static_cast<double>(wall_nanos_) / steps;
  std::string text = StrCat("step breakdown over ", steps_, " traced steps: ", Milliseconds(wall),
                            " per step (wall)\n");
  for (const auto& [name, device] : devices_) {
    const double busy = static_cast<double>(device.busy_nanos) / steps;
    const double before = static_cast<double>(device.before_first_op_nanos) / steps;
    const double after = static_cast<double>(device.after_last_op_nanos) / steps;
    const double idle = std::max(0.0, wall - busy);
    text += StrCat(name, ": ops ran ", Milliseconds(busy), " per step (", Percent(busy, wall),
                   "), none ran ", Milliseconds(idle), ": ", Milliseconds(before),
                   " before the first op, ", Milliseconds(std::max(0.0, idle - before - after)),
                   " between ops, ", Milliseconds(after), " after the last\n");
    std::vector<std::pair<std::string, OpTotal>> ops(device.ops.begin(), device.ops.end());
    std::sort(ops.begin(), ops.end(),
              [](const auto& a, const auto& b) { return a.second.nanos > b.second.nanos; });
    auto add_line = [&](const std::string& op, const OpTotal& total) {
      char line[160];
      std::snprintf(line, sizeof(line), "  %-32s %10s  %5.1f per step\n", op.c_str(),
                    Milliseconds(static_cast<double>(total.nanos) / steps).c_str(),
                    static_cast<double>(total.count) / steps);
      text += line;
    };
    OpTotal rest;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (static_cast<int>(i) < top_ops) {
        add_line(ops[i].first, ops[i].second);
      } else {
        rest.nanos += ops[i].second.nanos;
        rest.count += ops[i].second.count;
      }
    }
    if (rest.count > 0) add_line("(other ops)", rest);
  }
  return text;
}

}  // namespace weft
