#include "weft/runtime/trace/step_stats_collector.h"

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
  by_device_[device].nodes.push_back(std::move(stats));
}

void StepStatsCollector::SaveDeferred(const std::string& device,
                                      std::unique_ptr<const DeferredNodeStats> stats) {
  MutexLock lock(mu_);
  by_device_[device].deferred.push_back(std::move(stats));
}

namespace {

// A collective kernel's peers: the other devices that ran its instance in this step (every
// member's event without peers of its own) and the tasks its operation across processes reached
// (an event that comes with its peers).
void AddCollectivePeers(proto::StepStats* step_stats, int first_device) {
  using Instance = std::pair<int64_t, int64_t>;
  std::map<Instance, std::set<std::string>> members, remote;
  auto is_member = [](const proto::NodeExecStats& node) {
    return node.kind() == proto::NodeExecStats::COLLECTIVE && node.peers_size() == 0;
  };
  for (int d = first_device; d < step_stats->dev_stats_size(); ++d) {
    const proto::DeviceStepStats& device = step_stats->dev_stats(d);
    for (const proto::NodeExecStats& node : device.node_stats()) {
      if (node.kind() != proto::NodeExecStats::COLLECTIVE) continue;
      const Instance instance = {node.collective_group_key(), node.collective_instance_key()};
      if (is_member(node)) {
        members[instance].insert(device.device());
      } else {
        remote[instance].insert(node.peers().begin(), node.peers().end());
      }
    }
  }
  if (members.empty()) return;
  for (int d = first_device; d < step_stats->dev_stats_size(); ++d) {
    proto::DeviceStepStats* device = step_stats->mutable_dev_stats(d);
    for (proto::NodeExecStats& node : *device->mutable_node_stats()) {
      if (!is_member(node)) continue;
      const Instance instance = {node.collective_group_key(), node.collective_instance_key()};
      for (const std::string& peer : members[instance]) {
        if (peer != device->device()) node.add_peers(peer);
      }
      for (const std::string& peer : remote[instance]) node.add_peers(peer);
    }
  }
}

}  // namespace

void StepStatsCollector::Finalize(proto::StepStats* step_stats) {
  std::map<std::string, DeviceRecords> by_device;
  {
    MutexLock lock(mu_);
    by_device.swap(by_device_);
  }
  const int first_device = step_stats->dev_stats_size();
  for (auto& [device, records] : by_device) {
    proto::DeviceStepStats* device_stats = step_stats->add_dev_stats();
    device_stats->set_device(device);
    device_stats->set_task(TaskOfDevice(device));
    for (const auto& deferred : records.deferred) deferred->AppendTo(device_stats);
    for (proto::NodeExecStats& node : records.nodes) {
      *device_stats->add_node_stats() = std::move(node);
    }
  }
  AddCollectivePeers(step_stats, first_device);
}

}  // namespace weft
