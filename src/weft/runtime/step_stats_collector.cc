#include "weft/runtime/step_stats_collector.h"

#include <set>
#include <utility>

#include "weft/core/mutex.h"

namespace weft {

void SetStatsTimes(int64_t start_nanos, int64_t end_nanos, proto::NodeExecStats* stats) {
  const int64_t duration = end_nanos > start_nanos ? end_nanos - start_nanos : 0;
  stats->set_all_start_micros(start_nanos / 1000);
  stats->set_all_start_nanos(start_nanos);
  stats->set_op_start_rel_micros(0);
  stats->set_op_end_rel_micros(duration / 1000);
  stats->set_all_end_rel_micros(duration / 1000);
  stats->set_op_end_rel_nanos(duration);
}

std::string TaskOfDevice(std::string_view device) {
  const size_t task = device.find("/task:");
  if (task == std::string_view::npos) return std::string(device);
  size_t end = task + 6;
  while (end < device.size() && device[end] >= '0' && device[end] <= '9') ++end;
  return std::string(device.substr(0, end));
}

void StepStatsCollector::Save(const std::string& device, proto::NodeExecStats stats) {
  MutexLock lock(mu_);
  by_device_[device].push_back(std::move(stats));
}

void StepStatsCollector::Finalize(proto::StepStats* step_stats) {
  std::map<std::string, std::vector<proto::NodeExecStats>> by_device;
  {
    MutexLock lock(mu_);
    by_device.swap(by_device_);
  }
  // Each collective instance's member devices here, and the other tasks its operation across
  // processes (an event that comes with its peers) reached: every member's peers.
  using Instance = std::pair<int64_t, int64_t>;
  std::map<Instance, std::set<std::string>> members, remote;
  auto is_member = [](const proto::NodeExecStats& node) {
    return node.kind() == proto::NodeExecStats::COLLECTIVE && node.peers_size() == 0;
  };
  for (const auto& [device, nodes] : by_device) {
    for (const proto::NodeExecStats& node : nodes) {
      if (node.kind() != proto::NodeExecStats::COLLECTIVE) continue;
      const Instance instance = {node.collective_group_key(), node.collective_instance_key()};
      if (is_member(node)) {
        members[instance].insert(device);
      } else {
        remote[instance].insert(node.peers().begin(), node.peers().end());
      }
    }
  }
  for (auto& [device, nodes] : by_device) {
    proto::DeviceStepStats* device_stats = step_stats->add_dev_stats();
    device_stats->set_device(device);
    device_stats->set_task(TaskOfDevice(device));
    for (auto& node : nodes) {
      if (is_member(node)) {
        const Instance instance = {node.collective_group_key(), node.collective_instance_key()};
        for (const std::string& peer : members[instance]) {
          if (peer != device) node.add_peers(peer);
        }
        for (const std::string& peer : remote[instance]) node.add_peers(peer);
      }
      *device_stats->add_node_stats() = std::move(node);
    }
  }
}

}  // namespace weft
