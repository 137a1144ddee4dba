// AllReduceCrossDeviceOps: reduces per-replica values with CollectiveAllReduce nodes, one per
// replica per bucket, so every device sums with the others directly instead of through one device.
//
// The all-reduce applies when a value's source devices are exactly the destinations (same devices,
// same order) and its dtype is float32 or float64 (what the collective supports); any other value
// goes through the fallback ReductionToOneDevice. BatchReduce packs the values into buckets:
// values are taken in reverse order (gradients of the last layers are produced first by the
// backward pass, so their bucket can start reducing while earlier layers still compute), and
// consecutive values of one dtype share a bucket while their static sizes add up to at most
// bytes_per_pack; a value whose shape is not fully known gets a bucket of its own. A bucket is not
// concatenated: its tensors are the N inputs of one CollectiveAllReduce per replica.
//
// Every bucket takes a fresh instance_key from a counter owned by this object, identical across
// the replicas of the bucket, so the members of one reduction meet in one step. Two objects used in
// one graph (or in graphs run by one session) need different group_keys, and one group_key must
// always be used with the same number of replicas. A step must run every replica's collective of
// a bucket or none: fetch (or run as targets) all components of the results, since a member that
// pruning removes leaves the others waiting for it. Not thread-safe (graph building is not).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "weft/distribute/cross_device_ops.h"

namespace weft::distribute {

struct AllReduceOptions {
  // Largest bucket, in bytes of static tensor size; <= 0 puts every value of a dtype in one
  // bucket. 4 MB amortises the fixed cost of one collective (every member must arrive, and a
  // wake-up across cores costs ~30 us on our machines: small against the ~0.35 ms that summing
  // 4 MB takes at memory speed) while still cutting a model's gradients into several buckets, so
  // reducing late layers overlaps computing early ones; it is also the size from which our
  // allocator recycles blocks, so bucket buffers are reused between steps.
  int64_t bytes_per_pack = int64_t{4} << 20;
  // Shared by all collectives this object builds.
  int64_t group_key = 1;
  // Workers whose replicas reduce together (MultiWorkerMirroredStrategy): the group holds
  // destinations x num_workers members, and a value the collective cannot reduce is an error (the
  // fallback would reduce only this worker's replicas).
  int num_workers = 1;
  // Chain each replica's collectives in the order they are built (a control dependency on the
  // replica's previous one), so every process runs them in one order: needed when they cross
  // processes, whose transports run one operation at a time. Within one process the collectives
  // of different buckets may run at once, so leave it off there.
  bool order_collectives = false;
  // The type float32 values travel and are summed in: float32, or bfloat16 to halve the bytes
  // each all-reduce moves (each replica rounds its value to bfloat16, the members sum in float32
  // and round the sum, and the result is widened back to float32; a ring rounds once per hop).
  // Values of other types are reduced as they are.
  DataType communication_dtype = DataType::kFloat;
};

class AllReduceCrossDeviceOps final : public CrossDeviceOps {
 public:
  explicit AllReduceCrossDeviceOps(AllReduceOptions options = {}) : options_(options) {}

  StatusOr<Mirrored> Reduce(const Scope& scope, ReduceOp op, const PerReplica& value,
                            const std::vector<std::string>& destinations) override;
  StatusOr<std::vector<Mirrored>> BatchReduce(
      const Scope& scope, ReduceOp op, const std::vector<PerReplica>& values,
      const std::vector<std::string>& destinations) override;
  // Broadcasting needs no reduction: the fallback's Identity per destination.
  StatusOr<Mirrored> Broadcast(const Scope& scope, const Output& value,
                               const std::vector<std::string>& destinations) override;

  const AllReduceOptions& options() const { return options_; }

  // For other collectives built beside the all-reduces of this group (a strategy's broadcast of
  // initial values): a fresh instance key; the scope that orders a collective of replica `r` after
  // the replica's previous one (when order_collectives); and recording it as the new previous.
  int64_t NewInstanceKey() { return next_instance_key_++; }
  Scope Ordered(const Scope& scope, int r) const;
  void Remember(int r, const Output& collective);
  std::vector<Output> TakeOrdering() override { return std::exchange(last_collective_, {}); }
  void SetOrdering(std::vector<Output> last) override { last_collective_ = std::move(last); }

 private:
  AllReduceOptions options_;
  int64_t next_instance_key_ = 1;
  std::vector<Output> last_collective_;  // by replica, when ordered
  ReductionToOneDevice fallback_;
};

// The buckets BatchReduce makes from values of these dtypes and static shapes, as lists of value
// indices in the order they are reduced (exposed for tests and for sizing bytes_per_pack).
std::vector<std::vector<int>> PackIntoBuckets(const std::vector<DataType>& dtypes,
                                              const std::vector<PartialShape>& shapes,
                                              int64_t bytes_per_pack);

}  // namespace weft::distribute
