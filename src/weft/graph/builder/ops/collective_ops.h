// Builders for collective ops: CollectiveAllReduce, which sums (or averages) a bucket of tensors
// across the group_size members sharing group_key and instance_key in one step.
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

// One output per input, each the reduction of that input across the group. Empty on error (the
// error is recorded in `scope`).
std::vector<Output> CollectiveAllReduce(const Scope& scope, const std::vector<Output>& inputs,
                                        const CollectiveAllReduceAttrs& attrs);

}  // namespace weft::ops
