#include "weft/distributed/worker/graph_mgr.h"

#include <cstdio>
#include <set>
#include <utility>

#include "weft/distributed/worker/step_cleanup.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/call_frame.h"
#include "weft/framework/device_name_utils.h"
#include "weft/framework/tensor_proto_util.h"
#include "weft/runtime/trace/step_stats_collector.h"

namespace weft {

GraphMgr::GraphMgr(std::string task_name, std::shared_ptr<const DeviceMgr> devices,
                   const OpRegistry* ops, const KernelRegistry* kernels)
    : task_name_(std::move(task_name)),
      devices_(std::move(devices)),
      ops_(ops),
      kernels_(kernels) {}

Status GraphMgr::CheckPartition(const proto::DevicePartition& partition, int num_feeds,
                                int num_fetches) const {
  bool on_this_worker = false;
  for (const Device* device : devices_->ListDevices()) {
    if (device->name() == partition.device()) on_this_worker = true;
  }
  if (!on_this_worker) {
    std::vector<std::string> names;
    for (const Device* device : devices_->ListDevices()) names.push_back(device->name());
    return InvalidArgument("partition device '", partition.device(), "' is not a device of worker ",
                           task_name_, " (it has ", StrJoin(names, ", "), ")");
  }
  for (const proto::NodeDef& node : partition.graph_def().node()) {
    if (node.device().empty()) {
      return InvalidArgument("node '", node.name(), "' of the partition for ", partition.device(),
                             " has no device");
    }
    StatusOr<std::string> device = CanonicalizeDeviceName(node.device(), partition.device());
    if (!device.ok() || *device != partition.device()) {
      return InvalidArgument("node '", node.name(), "' is on device '", node.device(),
                             "' but in the partition for ", partition.device());
    }
    const bool is_arg = node.op() == "_Arg";
    if (!is_arg && node.op() != "_Retval") continue;
    int64_t index = 0;
    WEFT_RETURN_IF_ERROR(GetNodeAttr(node, "index", &index));
    const int limit = is_arg ? num_feeds : num_fetches;
    if (index < 0 || index >= limit) {
      return InvalidArgument(node.op(), " node '", node.name(), "' has index ", index,
                             " but the graph registers ", limit, is_arg ? " feeds" : " fetches");
    }
  }
  return Status::OK();
}

StatusOr<std::string> GraphMgr::Register(const proto::RegisterGraphRequest& request) {
  if (request.partition_size() == 0) {
    return InvalidArgument("RegisterGraph for session '", request.session_handle(),
                           "' carries no partition");
  }
  std::map<std::string, proto::GraphDef> partitions;
  for (const proto::DevicePartition& partition : request.partition()) {
    WEFT_RETURN_IF_ERROR(CheckPartition(partition, request.feed_size(), request.fetch_size()));
    if (!partitions.emplace(partition.device(), partition.graph_def()).second) {
      return InvalidArgument("device '", partition.device(), "' has two partitions");
    }
  }
  auto item = std::make_shared<Item>();
  item->devices = devices_;
  item->feeds.assign(request.feed().begin(), request.feed().end());
  item->fetches.assign(request.fetch().begin(), request.fetch().end());
  item->sends_to_other_tasks = ::weft::SendsToOtherTasks(request, task_name_);
  std::set<std::string> seen;
  for (const std::string& feed : item->feeds) {
    if (!seen.insert(feed).second) return InvalidArgument("feed '", feed, "' is registered twice");
  }
  WEFT_ASSIGN_OR_RETURN(item->executors, StepExecutors::CreateFromPartitions(partitions, *devices_,
                                                                             *ops_, *kernels_));
  MutexLock lock(mu_);
  char handle[32];
  std::snprintf(handle, sizeof(handle), "%016llx",
                static_cast<unsigned long long>(++next_handle_));  // NOLINT(runtime/int)
  items_[handle] = std::move(item);
  return std::string(handle);
}

Status GraphMgr::Deregister(const std::string& graph_handle) {
  MutexLock lock(mu_);
  if (items_.erase(graph_handle) == 0) {
    return Aborted("graph handle '", graph_handle, "' is not found on worker ", task_name_,
                   "; possibly this worker restarted");
  }
  return Status::OK();
}

bool GraphMgr::SendsToOtherTasks(const std::string& graph_handle) {
  StatusOr<std::shared_ptr<const Item>> item = Lookup(graph_handle);
  return !item.ok() || (*item)->sends_to_other_tasks;
}

StatusOr<std::shared_ptr<const GraphMgr::Item>> GraphMgr::Lookup(const std::string& graph_handle) {
  MutexLock lock(mu_);
  auto it = items_.find(graph_handle);
  if (it == items_.end()) {
    return Aborted("graph handle '", graph_handle, "' is not found on worker ", task_name_,
                   "; possibly this worker restarted");
  }
  return it->second;
}

void GraphMgr::ExecuteAsync(const StepArgs& args, const proto::RunGraphRequest& request,
                            proto::RunGraphResponse* response, StatusCallback done) {
  StatusOr<std::shared_ptr<const Item>> found = Lookup(request.graph_handle());
  if (!found.ok()) {
    done(found.status());
    return;
  }
  std::shared_ptr<const Item> item = std::move(found).value();

  // Each registered feed exactly once, in registration order.
  std::map<std::string, int> feed_index;
  for (size_t i = 0; i < item->feeds.size(); ++i) feed_index[item->feeds[i]] = static_cast<int>(i);
  std::vector<Tensor> args_in_order(item->feeds.size());
  std::vector<bool> fed(item->feeds.size(), false);
  for (const proto::NamedTensorProto& send : request.send()) {
    auto it = feed_index.find(send.name());
    if (it == feed_index.end()) {
      done(InvalidArgument("RunGraph of graph '", request.graph_handle(), "' in step ",
                           request.step_id(), " sends '", send.name(),
                           "', which is not a feed of the graph"));
      return;
    }
    if (fed[it->second]) {
      done(InvalidArgument("RunGraph of graph '", request.graph_handle(), "' in step ",
                           request.step_id(), " sends feed '", send.name(), "' twice"));
      return;
    }
    StatusOr<Tensor> tensor = TensorFromProto(send.tensor());
    if (!tensor.ok()) {
      done(InvalidArgument("feed '", send.name(), "' of step ", request.step_id(),
                           " is not a valid tensor: ", tensor.status().message()));
      return;
    }
    fed[it->second] = true;
    args_in_order[it->second] = std::move(tensor).value();
  }
  for (size_t i = 0; i < fed.size(); ++i) {
    if (!fed[i]) {
      done(InvalidArgument("RunGraph of graph '", request.graph_handle(), "' in step ",
                           request.step_id(), " is missing feed '", item->feeds[i], "'"));
      return;
    }
  }

  // What the step needs until it ends.
  struct StepState {
    std::shared_ptr<const Item> item;
    std::unique_ptr<CallFrame> call_frame;
  };
  auto state = std::make_shared<StepState>();
  state->item = item;
  state->call_frame =
      std::make_unique<CallFrame>(std::move(args_in_order), static_cast<int>(item->fetches.size()));
  StepExecutors::RunArgs run_args;
  run_args.step_id = args.step_id;
  run_args.call_frame = state->call_frame.get();
  run_args.cancellation_manager = args.cancellation_manager;
  run_args.runner = args.runner;
  run_args.stats = args.stats;
  run_args.rendezvous = args.rendezvous;
  run_args.collective_executor = args.collective_executor;
  item->executors->RunAsync(run_args, [state, response, stats = args.stats, step_id = args.step_id,
                                       done = std::move(done)](const Status& status) {
    if (!status.ok()) {
      done(status);
      return;
    }
    StatusOr<std::vector<Tensor>> fetches = state->call_frame->ConsumeRetvals();
    if (!fetches.ok()) {
      done(Internal("failed to fetch the outputs of step ", step_id, ": ",
                    fetches.status().message()));
      return;
    }
    for (size_t i = 0; i < fetches->size(); ++i) {
      proto::NamedTensorProto* recv = response->add_recv();
      recv->set_name(state->item->fetches[i]);
      *recv->mutable_tensor() = ToProto((*fetches)[i]);
    }
    if (stats != nullptr) stats->Finalize(response->mutable_step_stats());
    done(Status::OK());
  });
}

}  // namespace weft
