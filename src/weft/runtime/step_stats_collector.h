// StepStatsCollector: gathers per-node timings of one step from every executor thread when
// RunOptions asks for a trace, and hands them over as a StepStats proto. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
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

class StepStatsCollector {
 public:
  void Save(const std::string& device, proto::NodeExecStats stats);
  // Moves everything collected into `step_stats` (one DeviceStepStats per device).
  void Finalize(proto::StepStats* step_stats);

 private:
  Mutex mu_;
  std::map<std::string, std::vector<proto::NodeExecStats>> by_device_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft
