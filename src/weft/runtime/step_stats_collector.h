// StepStatsCollector: gathers per-node timings of one step from every executor thread when
// RunOptions asks for a trace, and hands them over as a StepStats proto. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "weft/step_stats.pb.h"

namespace weft {

class StepStatsCollector {
 public:
  void Save(const std::string& device, proto::NodeExecStats stats);
  // Moves everything collected into `step_stats` (one DeviceStepStats per device).
  void Finalize(proto::StepStats* step_stats);

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<proto::NodeExecStats>> by_device_;  // guarded by mu_
};

}  // namespace weft
