// StepStatsCollector: gathers per-node timings of one step from every executor thread when
// RunOptions asks for a trace, and hands them over as a StepStats proto. Thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/step_stats.pb.h"

namespace weft {

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
