// The immutable part of an executor, precomputed once per graph: each node's kernel, where its
// inputs live in the step's flat input array, whom it feeds, and its initial pending count.
// Shared read-only by every step the executor runs.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "weft/framework/op_kernel.h"
#include "weft/graph/graph.h"
#include "weft/runtime/trace/node_trace_info.h"

namespace weft::internal {

struct OutputTarget {
  int dst_node = 0;
  int dst_slot = -1;  // index into the step's input array; -1 for a control edge
  int src_output = 0;
  bool last_use = false;  // the last data edge reading src_output: it may take the tensor
};

struct NodeItem {
  const Node* node = nullptr;
  std::unique_ptr<OpKernel> kernel;
  int input_start = 0;
  int num_inputs = 0;
  int initial_pending = 0;
  bool is_async = false;
  bool declared_cheap = false;
  std::vector<OutputTarget> targets;
  // Moving average of Compute time; nodes measured below the inline threshold run inline.
  mutable std::atomic<int64_t> average_cost_nanos{-1};

  bool RunsInline() const;
  void RecordCost(int64_t nanos) const;
};

struct ExecutorGraph {
  std::unique_ptr<const Graph> graph;
  std::vector<NodeItem> items;  // indexed by node id; node == nullptr for removed ids
  std::vector<int> roots;       // nodes with nothing pending at the start of a step
  int total_inputs = 0;
  // Indexed by node id; read by traced steps only, kept apart so NodeItems stay small, and shared
  // with the step stats that outlive a step.
  std::shared_ptr<const std::vector<NodeTraceInfo>> trace_info;
};

}  // namespace weft::internal
