// StepStatsCollector: gathers per-node timings of one step from every executor thread when
// RunOptions asks for a trace (and, on a worker, the step's RecvTensor calls and collectives
// across processes), and hands them over as a StepStats proto, each device under its task.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/step_stats.pb.h"

namespace weft {

// The clock of step stats (NodeExecStats::all_start_nanos): wall time in nanoseconds since the
// epoch, comparable across devices and with a Run's own start and end.
inline int64_t StepStatsNowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Sets the start, end and duration fields of `stats` (both resolutions) from wall-clock nanos.
void SetStatsTimes(int64_t start_nanos, int64_t end_nanos, proto::NodeExecStats* stats);

// The task a device belongs to: "/job:worker/replica:0/task:1" for
// "/job:worker/replica:0/task:1/device:CPU:0" and for "/job:worker/replica:0/task:1/master"; the
// name itself when it names no task.
std::string TaskOfDevice(std::string_view device);

// Node stats recorded during a step as plain numbers and turned into NodeExecStats only when the
// step is finalized, so that a traced step's nodes pay no allocation or lock each (an executor
// hands over all of its step's nodes at once).
class DeferredNodeStats {
 public:
  virtual ~DeferredNodeStats() = default;
  // Appends one NodeExecStats per recorded node to `device_stats`.
  virtual void AppendTo(proto::DeviceStepStats* device_stats) const = 0;
};

class StepStatsCollector {
 public:
  void Save(const std::string& device, proto::NodeExecStats stats);
  void SaveDeferred(const std::string& device, std::unique_ptr<const DeferredNodeStats> stats);
  // Moves everything collected into `step_stats`: one DeviceStepStats per device, its task set
  // (TaskOfDevice). A collective kernel's peers become the other devices that ran the same
  // instance in this step (its members in this process) and the tasks its operation across
  // processes reached (that event's peers).
  void Finalize(proto::StepStats* step_stats);

 private:
  struct DeviceRecords {
    std::vector<std::unique_ptr<const DeferredNodeStats>> deferred;
    std::vector<proto::NodeExecStats> nodes;
  };

  Mutex mu_;
  std::map<std::string, DeviceRecords> by_device_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft
