#include "weft/distributed/worker/step_cleanup.h"

#include "weft/framework/attr_value_util.h"

namespace weft {

bool SendsToOtherTasks(const proto::RegisterGraphRequest& registration, std::string_view task) {
  for (const proto::DevicePartition& partition : registration.partition()) {
    for (const proto::NodeDef& node : partition.graph_def().node()) {
      if (node.op() != "_Send") continue;
      std::string device;
      // An unreadable attribute counts as remote: keeping a rendezvous too long is the safe side.
      if (!GetNodeAttr(node, "recv_device", &device).ok()) return true;
      const bool on_task =
          device.size() > task.size() && device.starts_with(task) && device[task.size()] == '/';
      if (!on_task) return true;
    }
  }
  return false;
}

}  // namespace weft
