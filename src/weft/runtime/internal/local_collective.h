// Internals of LocalCollectiveExecutor shared by its three collectives: an instance and its
// members, the checks every kind makes, and the path from a full instance to every member's done
// (stage inputs into host memory, compute, deliver the host results). Private to the runtime.
// Nothing here locks the executor: see CollectiveInstance for who may touch what, and when.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/framework/collective.h"
#include "weft/framework/device_base.h"

namespace weft::internal {

enum class CollectiveKind { kAllReduce, kBroadcast, kAllGather };

// "all-reduce", "broadcast", "all-gather".
std::string_view CollectiveKindName(CollectiveKind kind);

// One member's call, as the executor received it.
struct CollectiveMember {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  DeviceBase* device = nullptr;
  CollectiveParams params;
  // All-reduce: the bucket; all-gather: the one input; broadcast: the source's value (a receiver
  // has none). Each is replaced by a host copy before the computation when it lives elsewhere.
  std::vector<Tensor> inputs;
  std::vector<Tensor>* outputs = nullptr;  // all-reduce: resized to the bucket
  Tensor* output = nullptr;                // broadcast receivers and all-gather: the one result
  bool is_source = false;                  // broadcast: the member whose value the others get
  DataType expected_dtype = DataType::kInvalid;  // broadcast receivers: their kernel's attrs
  TensorShape expected_shape;
  StatusCallback done;

  // Where result `i` goes.
  Tensor& Output(size_t i) { return outputs != nullptr ? (*outputs)[i] : *output; }
};

// A member of `kind` on `device`; the caller adds its tensors.
CollectiveMember NewMember(CollectiveKind kind, const CollectiveParams& params, DeviceBase* device,
                           StatusCallback done);

// A run of elements [begin, end) of tensor `tensor` of an all-reduce: what one thread sums at a
// time.
struct AllReducePiece {
  size_t tensor = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

// Members join under the executor's lock while the instance is kJoining. Once it is kFull the
// computation owns `members` and `targets` without a lock: each task writes only its own part, and
// `pieces_left` (all-reduce) or `copies_left` orders every part before the thread that goes on
// reads them. `kind`, `state`, `status` and `label` are read under the executor's lock only, and
// never change after kFull.
struct CollectiveInstance {
  enum class State { kJoining, kFull, kFailed };

  std::string label;  // "collective instance (group_key 1, instance_key 2)"
  CollectiveKind kind = CollectiveKind::kAllReduce;  // the first member's
  State state = State::kJoining;
  Status status;                          // why it failed, when kFailed
  std::vector<CollectiveMember> members;  // in device name order (rank order) once kFull
  // The results in host memory: shared by the members in host memory, copied to each member with
  // memory of its own. All-reduce: one sum per tensor; broadcast: the source's value; all-gather:
  // the concatenation.
  std::vector<Tensor> targets;
  // All-reduce: its pieces, the next one to claim, and how many are not yet summed.
  std::vector<AllReducePiece> pieces;
  std::atomic<int64_t> next_piece{0};
  std::atomic<int64_t> pieces_left{0};
  std::atomic<int> copies_left{0};
  DeviceBase* last = nullptr;  // the device of the member that completed the instance

  Mutex copy_mu;
  Status copy_status WEFT_GUARDED_BY(copy_mu);  // the first failed copy
};

std::string InstanceLabel(const CollectiveParams& params);

// "<label>: member on device 'b' has <what> <got>, but member on device 'a' has <expected>".
template <typename A, typename B>
Status Mismatch(const std::string& label, const CollectiveMember& first,
                const CollectiveMember& member, std::string_view what, const A& expected,
                const B& got) {
  return InvalidArgument(label, ": member on device '", member.device->name(), "' has ", what, " ",
                         got, ", but member on device '", first.device->name(), "' has ", expected);
}

// Checks that `member` may join `instance` (the caller holds the executor's lock): valid on its
// own, the same kind and group_size as the first member, a device not yet in it, then the checks
// of its kind (below).
Status CheckMember(const CollectiveInstance& instance, const CollectiveMember& member);
// The checks of each kind: the member's own values, and agreement with the members already in.
Status CheckAllReduceMember(const CollectiveInstance& instance, const CollectiveMember& member);
Status CheckBroadcastMember(const CollectiveInstance& instance, const CollectiveMember& member);
Status CheckAllGatherMember(const CollectiveInstance& instance, const CollectiveMember& member);

// Runs a full instance: called once, by the thread of the member that completed it (`last`). Ranks
// the members by device name (so results do not depend on arrival order), copies inputs outside
// host memory to host memory, then runs the computation of the instance's kind (below). Touches
// neither the executor nor, after the last member's done, the instance.
void StartCollective(std::shared_ptr<CollectiveInstance> instance, DeviceBase* last);
// The computations, on staged (host) inputs; each ends by calling DeliverOutputs or FinishInstance.
void RunAllReduce(std::shared_ptr<CollectiveInstance> instance);
void RunBroadcast(std::shared_ptr<CollectiveInstance> instance);
void RunAllGather(std::shared_ptr<CollectiveInstance> instance);

// Hands `targets` to every member but a broadcast's source (shared in host memory, copied through
// the member's device otherwise), then calls every member's done.
void DeliverOutputs(const std::shared_ptr<CollectiveInstance>& instance);
// Calls every member's done with `status` and releases the members; `instance` must be owned by
// the caller alone (the computation done, or never started).
void FinishInstance(CollectiveInstance& instance, const Status& status);

}  // namespace weft::internal
