// ReduceOnEachDestination: a CrossDeviceOps in which every destination device sums all the
// components itself (one AddN per destination, components in replica order, so every destination
// computes bitwise the same value). Each component crosses devices once, straight to where it is
// needed: n x (n - 1) transfers, but no second hop through a reducing device. Meant for a few
// replicas on several processes (in-graph replication over a cluster), where that second hop's
// latency is most of a step; MirroredStrategy picks it when its devices span several tasks.
// Not thread-safe (graph building is not).
#pragma once

#include "weft/distribute/cross_device_ops.h"

namespace weft::distribute {

class ReduceOnEachDestination final : public CrossDeviceOps {
 public:
  // SUM or MEAN (integer dtypes truncate) of the components on each destination.
  StatusOr<Mirrored> Reduce(const Scope& scope, ReduceOp op, const PerReplica& value,
                            const std::vector<std::string>& destinations) override;
  StatusOr<std::vector<Mirrored>> BatchReduce(
      const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
      const std::vector<std::string>& destinations) override;
  // An Identity of `value` on each destination.
  StatusOr<Mirrored> Broadcast(const Scope& scope, const Output& value,
                               const std::vector<std::string>& destinations) override;
};

}  // namespace weft::distribute
