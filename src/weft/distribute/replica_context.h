// ReplicaContext: what code running for one replica inside Strategy::Run sees — its replica id,
// the strategy, and the two ways replicas cooperate while the graph is built:
//
//  - MergeCall(values, merge_fn): pauses this replica until every replica has reached its own
//    MergeCall, then runs merge_fn ONCE, in cross-replica context, with value i of every replica
//    grouped as grouped[i] (a PerReplica); each replica then continues with its component of
//    every DistributedValues merge_fn returned. merge_fn comes from replica 0 (all replicas are
//    expected to pass the same function). Replicas that make different numbers of MergeCalls
//    make Run fail with an error naming the counts.
//  - AllReduce(op, value): a MergeCall that reduces the value with the strategy's CrossDeviceOps;
//    each replica gets the reduced value on its own device.
//
// A ReplicaContext belongs to one replica's thread inside Strategy::Run and is valid only while
// Run is building; it is not thread-safe. One made outside Run (null coordinator) serves a single
// replica: MergeCall then runs merge_fn at once.
//
// CurrentReplicaContext() is the context of the replica whose fn is running on this thread inside
// Strategy::Run, and null elsewhere (outside Run, and in merge functions, which run on the
// caller's thread): code such as Optimizer::ApplyGradients uses it when given no context.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/distribute/reduce_op.h"
#include "weft/distribute/values.h"

namespace weft::distribute {

class Strategy;
class ReplicaContext;

namespace internal {
// Implemented by the replica runner behind Strategy::Run.
class MergeCoordinator {
 public:
  using MergeFn = std::function<StatusOr<std::vector<DistributedValues>>(
      const Scope& cross_replica_scope, const std::vector<PerReplica>& grouped)>;
  virtual ~MergeCoordinator() = default;
  virtual StatusOr<std::vector<Output>> MergeCall(int replica_id, const std::vector<Output>& values,
                                                  MergeFn merge_fn) = 0;
};
}  // namespace internal

class ReplicaContext {
 public:
  using MergeFn = internal::MergeCoordinator::MergeFn;

  // `coordinator` may be null when the strategy has one replica; `cross_replica_scope` is where
  // merge functions build then.
  ReplicaContext(const Strategy& strategy, int replica_id, Scope cross_replica_scope,
                 internal::MergeCoordinator* coordinator);
  ReplicaContext(const ReplicaContext&) = delete;
  ReplicaContext& operator=(const ReplicaContext&) = delete;

  int replica_id() const { return replica_id_; }
  int num_replicas_in_sync() const;
  const Strategy& strategy() const { return strategy_; }
  // This replica's device.
  const std::string& device() const;

  // See the file comment. merge_fn's results must each have num_replicas_in_sync() components.
  StatusOr<std::vector<Output>> MergeCall(const std::vector<Output>& values, MergeFn merge_fn);
  // SUM or MEAN of `value` over all replicas, on this replica's device.
  StatusOr<Output> AllReduce(ReduceOp op, const Output& value);

 private:
  const Strategy& strategy_;
  int replica_id_;
  Scope cross_replica_scope_;
  internal::MergeCoordinator* coordinator_;
};

// See the file comment.
ReplicaContext* CurrentReplicaContext();

namespace internal {
// Makes `context` this thread's CurrentReplicaContext() for the guard's lifetime (the replica
// runner sets it on each replica thread while fn runs).
class CurrentReplicaContextGuard {
 public:
  explicit CurrentReplicaContextGuard(ReplicaContext* context);
  ~CurrentReplicaContextGuard();
  CurrentReplicaContextGuard(const CurrentReplicaContextGuard&) = delete;
  CurrentReplicaContextGuard& operator=(const CurrentReplicaContextGuard&) = delete;

 private:
  ReplicaContext* previous_;
};
}  // namespace internal

}  // namespace weft::distribute
