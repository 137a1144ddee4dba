#include "weft/runtime/step_stats_collector.h"

#include "weft/core/mutex.h"

namespace weft {

void StepStatsCollector::Save(const std::string& device, proto::NodeExecStats stats) {
  MutexLock lock(mu_);
  by_device_[device].push_back(std::move(stats));
}

void StepStatsCollector::Finalize(proto::StepStats* step_stats) {
  MutexLock lock(mu_);
  for (auto& [device, nodes] : by_device_) {
    proto::DeviceStepStats* device_stats = step_stats->add_dev_stats();
    device_stats->set_device(device);
    for (auto& node : nodes) *device_stats->add_node_stats() = std::move(node);
  }
  by_device_.clear();
}

}  // namespace weft
