// Builders for collective ops, one node per member; members of one collective share group_key and
// instance_key and run in one step: CollectiveAllReduce sums (or averages) a bucket of tensors,
// CollectiveBroadcastSend / CollectiveBroadcastRecv copy one member's value to the others, and
// CollectiveAllGather concatenates every member's input along dimension 0 in device name order.
#pragma once

#include <string>
#include <vector>

#include "weft/graph/builder/node_builder.h"
#include "weft/graph/builder/scope.h"

namespace weft::ops {

struct CollectiveAllReduceAttrs {
  int64_t group_size = 1;
  int64_t group_key = 0;
  int64_t instance_key = 0;
  std::string final_op = "Id";  // "Div" divides the sum by group_size: a mean
};

// Which collective a broadcast or all-gather member joins.
struct CollectiveGroupAttrs {
  int64_t group_size = 1;
  int64_t group_key = 0;
  int64_t instance_key = 0;
};

// One output per input, each the reduction of that input across the group. Empty on error (the
// error is recorded in `scope`).
std::vector<Output> CollectiveAllReduce(const Scope& scope, const std::vector<Output>& inputs,
                                        const CollectiveAllReduceAttrs& attrs);

// The broadcast's one sender: sends `input`, which must have the fully defined `shape` that every
// receiver declares too; outputs `input`.
Output CollectiveBroadcastSend(const Scope& scope, const Input& input, const PartialShape& shape,
                               const CollectiveGroupAttrs& attrs);
// A receiver of the broadcast: outputs the sender's value, of `dtype` and the fully defined
// `shape`.
Output CollectiveBroadcastRecv(const Scope& scope, DataType dtype, const PartialShape& shape,
                               const CollectiveGroupAttrs& attrs);

// Every member's `input` (same dtype and shape in every member, at least one dimension)
// concatenated along dimension 0, in the order of the members' device names.
Output CollectiveAllGather(const Scope& scope, const Input& input,
                           const CollectiveGroupAttrs& attrs);

}  // namespace weft::ops
