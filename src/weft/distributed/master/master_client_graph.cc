#include "weft/distributed/master/master_client_graph.h"

#include <map>
#include <set>

#include "weft/core/str_util.h"
#include "weft/distributed/master/master_devices.h"
#include "weft/distributed/worker/step_cleanup.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/tensor_proto_util.h"
#include "weft/graph/coalesce_variable_reads.h"
#include "weft/graph/partition.h"
#include "weft/graph/placer.h"

namespace weft {
namespace {

StatusOr<std::vector<FeedSpec>> FeedSpecs(const Graph& step_graph, const StepSignature& signature) {
  std::vector<FeedSpec> feeds(signature.feeds.size());
  for (size_t i = 0; i < feeds.size(); ++i) feeds[i].name = signature.feeds[i];
  for (Node* node : step_graph.nodes()) {
    if (node->type_string() != "_Arg") continue;
    int64_t index = 0;
    WEFT_RETURN_IF_ERROR(GetNodeAttr(node->def(), "index", &index));
    if (index < 0 || static_cast<size_t>(index) >= feeds.size()) {
      return Internal("_Arg '", node->name(), "' has index ", index, " but the step has ",
                      feeds.size(), " feeds");
    }
    feeds[index].dtype = node->output_type(0);
    feeds[index].shape = node->output_shape(0);
  }
  return feeds;
}

// Renumbers the _Arg (or _Retval) nodes of one task's partitions to 0..k-1, returning the
// signature names they stand for in their new order.
Status Renumber(const std::string& op, const std::vector<std::string>& names,
                proto::RegisterGraphRequest* registration,
                google::protobuf::RepeatedPtrField<std::string>* out) {
  for (auto& partition : *registration->mutable_partition()) {
    for (auto& node : *partition.mutable_graph_def()->mutable_node()) {
      if (node.op() != op) continue;
      int64_t index = 0;
      WEFT_RETURN_IF_ERROR(GetNodeAttr(node, "index", &index));
      if (index < 0 || static_cast<size_t>(index) >= names.size()) {
        return Internal(op, " '", node.name(), "' has index ", index, " of ", names.size());
      }
      (*node.mutable_attr())["index"] = MakeAttrValue(static_cast<int64_t>(out->size()));
      *out->Add() = names[index];
    }
  }
  return Status::OK();
}

// Moves each feed (_Arg) to the device of its consumers when they all share one, and each fetch
// (_Retval) to its producer's device. A feed then travels inside the RunGraph request of the
// worker that uses it, and a fetch inside that worker's response, instead of each taking an extra
// RecvTensor round trip through the master's task (in-graph replication feeds every replica).
void PlaceFeedsAndFetchesWithTheirUsers(Graph* step_graph) {
  for (Node* node : step_graph->nodes()) {
    if (node->type_string() == "_Arg") {
      std::set<std::string> consumer_devices;
      for (const Edge* edge : node->out_edges()) {
        if (!edge->IsControlEdge()) consumer_devices.insert(edge->dst->assigned_device_name());
      }
      if (consumer_devices.size() == 1) node->set_assigned_device_name(*consumer_devices.begin());
    } else if (node->type_string() == "_Retval") {
      for (const Edge* edge : node->in_edges()) {
        if (!edge->IsControlEdge())
          node->set_assigned_device_name(edge->src->assigned_device_name());
      }
    }
  }
}

}  // namespace

StatusOr<ClientGraph> BuildClientGraph(const Graph& graph, const StepSignature& signature,
                                       const std::vector<proto::DeviceAttributes>& devices,
                                       const KernelRegistry* kernels,
                                       const ClientGraphOptions& options) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Graph> step_graph, BuildStepGraph(graph, signature));
  ClientGraph client_graph;
  WEFT_ASSIGN_OR_RETURN(client_graph.feeds, FeedSpecs(*step_graph, signature));

  std::vector<DeviceDescription> descriptions;
  std::map<std::string, uint64_t> incarnations;
  for (const auto& device : devices) {
    descriptions.push_back({device.name(), device.device_type()});
    incarnations[device.name()] = device.incarnation();
  }
  PlacerOptions placer_options;
  placer_options.allow_soft_placement = options.allow_soft_placement;
  placer_options.log_device_placement = options.log_device_placement;
  Placer placer(step_graph.get(), std::move(descriptions), 0, kernels, placer_options);
  WEFT_RETURN_IF_ERROR(placer.Run());
  PlaceFeedsAndFetchesWithTheirUsers(step_graph.get());
  WEFT_RETURN_IF_ERROR(CoalesceVariableReads(step_graph.get()).status());

  PartitionOptions partition_options;
  partition_options.get_incarnation = [&incarnations](const std::string& device) -> uint64_t {
    auto it = incarnations.find(device);
    return it == incarnations.end() ? 0 : it->second;
  };
  std::map<std::string, proto::GraphDef> partitions;
  WEFT_RETURN_IF_ERROR(Partition(partition_options, *step_graph, &partitions));

  std::map<std::string, TaskGraph> by_task;
  for (auto& [device, graph_def] : partitions) {
    WEFT_ASSIGN_OR_RETURN(std::string task, ParseTaskOfDevice(device));
    TaskGraph& task_graph = by_task[task];
    task_graph.task = task;
    proto::DevicePartition* partition = task_graph.registration.add_partition();
    partition->set_device(device);
    partition->mutable_graph_def()->Swap(&graph_def);
  }
  for (auto& [task, task_graph] : by_task) {
    proto::RegisterGraphRequest& registration = task_graph.registration;
    WEFT_RETURN_IF_ERROR(
        Renumber("_Arg", signature.feeds, &registration, registration.mutable_feed()));
    WEFT_RETURN_IF_ERROR(
        Renumber("_Retval", signature.fetches, &registration, registration.mutable_fetch()));
    task_graph.sends_to_other_tasks = SendsToOtherTasks(registration, task);
    client_graph.tasks.push_back(std::move(task_graph));
  }
  return client_graph;
}

}  // namespace weft

namespace weft {

Status CheckFeed(const proto::NamedTensorProto& feed, const FeedSpec& spec) {
  StatusOr<DataType> dtype = FromProto(feed.tensor().dtype());
  if (!dtype.ok()) {
    return InvalidArgument("feed '", feed.name(),
                           "' is not a valid tensor: ", dtype.status().message());
  }
  StatusOr<TensorShape> shape = TensorShapeFromProto(feed.tensor().tensor_shape());
  if (!shape.ok()) {
    return InvalidArgument("feed '", feed.name(),
                           "' is not a valid tensor: ", shape.status().message());
  }
  if (*dtype != spec.dtype) {
    return InvalidArgument("feed '", feed.name(), "' is ", DataTypeName(*dtype),
                           ", but the graph expects ", DataTypeName(spec.dtype));
  }
  if (!spec.shape.IsCompatibleWith(*shape)) {
    return InvalidArgument("feed '", feed.name(), "' has shape ", *shape,
                           ", which is not compatible with the graph's ", spec.shape.DebugString());
  }
  const uint64_t expected_bytes =
      static_cast<uint64_t>(shape->num_elements()) * DataTypeSize(*dtype);
  if (feed.tensor().tensor_content().size() != expected_bytes) {
    return InvalidArgument("feed '", feed.name(), "' has ", feed.tensor().tensor_content().size(),
                           " bytes of content, but a ", DataTypeName(*dtype), " tensor of shape ",
                           *shape, " needs ", expected_bytes);
  }
  return Status::OK();
}

}  // namespace weft
