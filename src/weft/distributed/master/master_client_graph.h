// The master's share of building one step signature: prune the session's graph for (feeds,
// fetches, targets), place it over every device of the cluster, refuse collectives that span
// tasks, partition it per device and group the partitions by task, each task's _Arg/_Retval nodes
// renumbered from 0 with the feed and fetch names they stand for (what RegisterGraph carries).
// Stateless; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "weft/framework/kernel_registry.h"
#include "weft/framework/partial_shape.h"
#include "weft/graph/prune.h"
#include "weft/worker.pb.h"

namespace weft {

// What a fed tensor must look like, from the _Arg that reads it.
struct FeedSpec {
  std::string name;
  DataType dtype = DataType::kInvalid;
  PartialShape shape;
};

// One task's share of the step graph.
struct TaskGraph {
  std::string task;  // "/job:worker/replica:0/task:1"
  // partition, feed and fetch filled in; the caller adds the session handle.
  proto::RegisterGraphRequest registration;
  // See step_cleanup.h: without such sends, a successful step needs no CleanupGraph here.
  bool sends_to_other_tasks = true;
};

struct ClientGraph {
  std::vector<TaskGraph> tasks;  // task name order
  std::vector<FeedSpec> feeds;   // in signature.feeds order
};

struct ClientGraphOptions {
  bool allow_soft_placement = false;
  bool log_device_placement = false;
};

// `devices`: every device of the cluster, the default device first. Errors are those of
// BuildStepGraph, the Placer and Partition (naming the node), or Unimplemented naming a
// CollectiveAllReduce whose group spans tasks.
StatusOr<ClientGraph> BuildClientGraph(const Graph& graph, const StepSignature& signature,
                                       const std::vector<proto::DeviceAttributes>& devices,
                                       const KernelRegistry* kernels,
                                       const ClientGraphOptions& options);

}  // namespace weft

namespace weft {

// Checks a fed value against its _Arg like DirectSession does (dtype, then shape), reading only
// the TensorProto's dtype, shape and content length, never decoding the content. InvalidArgument
// naming the feed.
Status CheckFeed(const proto::NamedTensorProto& feed, const FeedSpec& spec);

}  // namespace weft
