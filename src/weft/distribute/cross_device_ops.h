// CrossDeviceOps: how a Strategy moves values between devices while building a graph — reducing
// per-replica values (gradients) onto destination devices, and broadcasting one value to several.
// Every method adds nodes to `scope`'s graph and returns the new tensors; nothing runs until a
// Session runs the graph. Errors (empty destinations, mismatched replica counts, an empty or
// mistyped component) come back as InvalidArgument naming what is wrong; a failed call may leave
// unused nodes in the graph but records nothing in the scope.
//
// Implementations: ReductionToOneDevice (here) and AllReduceCrossDeviceOps
// (all_reduce_cross_device_ops.h). Not thread-safe (graph building is not): one thread at a time.
#pragma once

#include <string>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/distribute/reduce_op.h"
#include "weft/distribute/values.h"

namespace weft::distribute {

class CrossDeviceOps {
 public:
  virtual ~CrossDeviceOps() = default;

  // Combines the components of `value` (SUM, or MEAN = SUM / number of components) and puts the
  // result on every device of `destinations`: component i of the result lives on destinations[i].
  virtual StatusOr<Mirrored> Reduce(const Scope& scope, ReduceOp op, const PerReplica& value,
                                    const std::vector<std::string>& destinations) = 0;
  // Reduce of each value; all values must have the same number of components. Implementations
  // may reduce them together (AllReduceCrossDeviceOps packs them into buckets).
  virtual StatusOr<std::vector<Mirrored>> BatchReduce(
      const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
      const std::vector<std::string>& destinations) = 0;
  // A copy of `value` on every device of `destinations`.
  virtual StatusOr<Mirrored> Broadcast(const Scope& scope, const Output& value,
                                       const std::vector<std::string>& destinations) = 0;

  // For implementations that chain their collectives in one order (AllReduceCrossDeviceOps with
  // order_collectives): starts a new chain, for collectives run in steps of their own that must
  // not pull in the others (a second training graph, a broadcast of initial values), and returns
  // the old one, which SetOrdering puts back. Nothing to do for the others.
  virtual std::vector<Output> TakeOrdering() { return {}; }
  virtual void SetOrdering(std::vector<Output> /*last*/) {}

 protected:
  // BatchReduce as one Reduce per value, for implementations that gain nothing from batching.
  StatusOr<std::vector<Mirrored>> ReduceEach(const Scope& scope, ReduceOp op,
                                             const std::vector<PerReplica>& values,
                                             const std::vector<std::string>& destinations);
};

struct ReductionToOneDeviceOptions {
  // The device that sums; "" means the first destination.
  std::string reduce_to_device;
};

// Sums every component with one AddN on the reduce device (MEAN then divides by the number of
// components; integer dtypes truncate), then copies the result to each destination with an
// Identity placed there (the session adds the transfers). A single component already on the
// single destination device becomes one Identity of it. Works for any numeric dtype and any
// source and destination devices; costs (n - 1) transfers into one device plus one out to each
// destination, all through that device.
class ReductionToOneDevice final : public CrossDeviceOps {
 public:
  explicit ReductionToOneDevice(ReductionToOneDeviceOptions options = {})
      : options_(std::move(options)) {}

  StatusOr<Mirrored> Reduce(const Scope& scope, ReduceOp op, const PerReplica& value,
                            const std::vector<std::string>& destinations) override;
  StatusOr<std::vector<Mirrored>> BatchReduce(
      const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
      const std::vector<std::string>& destinations) override;
  StatusOr<Mirrored> Broadcast(const Scope& scope, const Output& value,
                               const std::vector<std::string>& destinations) override;

 private:
  ReductionToOneDeviceOptions options_;
};

// Checks shared by the implementations; `what` starts each message ("Reduce").
Status CheckDestinations(std::string_view what, const std::vector<std::string>& destinations);
Status CheckBatch(std::string_view what, const std::vector<PerReplica>& values);

}  // namespace weft::distribute
