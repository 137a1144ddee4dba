// LocalCollectiveExecutor: the CollectiveExecutor of one step whose members are devices of this
// process (MirroredStrategy's replicas). Members of an instance (same group_key and instance_key)
// join by calling AllReduceAsync, BroadcastAsync or AllGatherAsync; none of them blocks. The
// instance checks that every member agrees (the same call, group_size, and for an all-reduce
// merge_op, final_op and the count, dtypes and shapes of the tensors; for a broadcast the dtype and
// shape, with exactly one source; for an all-gather the dtype and shape of the input) and that no
// device joins twice; a mismatch fails every member, present and future, with InvalidArgument
// naming the instance and the two members' devices and values.
//
// Members are ranked by device name. Once group_size members have joined, the last to join runs
// the collective, on host memory: a member on a device with memory of its own has its inputs
// copied to host memory first and gets its results copied back, each through its device's
// DeviceContext. A result is one host buffer shared by every member on a host-memory device (a
// reader shares it; a consumer that wants to write in place sees the buffer shared and allocates):
//  - all-reduce: a reduce-scatter and an all-gather in shared memory: every tensor is cut into
//    pieces of whole cache lines, and each piece is summed over all members' inputs in rank order,
//    then final_op applied (Div divides by group_size), so every member gets bitwise the same
//    result whichever thread summed it. The last member to join claims pieces at once; the other
//    members' device threads (their intra-op pools) are offered to claim some too, so a thread
//    that wakes late finds the work done rather than the step waiting for it. The sums are fresh
//    buffers, so among host-memory devices it moves the bytes of one sum, copying nothing.
//  - broadcast: the result is the source's value itself (no copy among host-memory devices); the
//    source's own value is left as it is.
//  - all-gather: the inputs concatenated along dimension 0 in rank order, one fresh buffer.
// The last part (piece or copy) to finish calls every member's done, each exactly once, and never
// under a lock. A group of one completes at once with its input as its result.
//
// StartAbort fails every instance still waiting for members, and every later member, with the
// abort status; collectives already running finish. Completed and failed instances stay known for
// the step, so an extra member of a full instance, or a late member of a failed one, gets an error
// instead of waiting forever. Thread-safe. Callbacks may destroy the executor once the last done
// has been called; nothing touches it after that.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "weft/core/mutex.h"
#include "weft/framework/collective.h"

namespace weft {

namespace internal {
struct CollectiveInstance;  // one instance's members and computation (internal/local_collective.h)
struct CollectiveMember;
}  // namespace internal

class LocalCollectiveExecutor final : public CollectiveExecutor {
 public:
  LocalCollectiveExecutor();
  ~LocalCollectiveExecutor() override;
  LocalCollectiveExecutor(const LocalCollectiveExecutor&) = delete;
  LocalCollectiveExecutor& operator=(const LocalCollectiveExecutor&) = delete;

  void AllReduceAsync(const CollectiveParams& params, DeviceBase* device,
                      std::vector<Tensor> inputs, std::vector<Tensor>* outputs,
                      StatusCallback done) override;
  void BroadcastAsync(const CollectiveParams& params, DeviceBase* device, bool is_source,
                      DataType expected_dtype, const TensorShape& expected_shape, Tensor* value,
                      StatusCallback done) override;
  void AllGatherAsync(const CollectiveParams& params, DeviceBase* device, Tensor input,
                      Tensor* output, StatusCallback done) override;
  void StartAbort(const Status& status) override;

 private:
  // Adds `member` to its instance, or fails it (and the instance) when it does not fit; the member
  // that fills the instance runs it.
  void Join(internal::CollectiveMember member);

  Mutex mu_;
  Status abort_status_ WEFT_GUARDED_BY(mu_);
  // Keyed by (group_key, instance_key).
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<internal::CollectiveInstance>> instances_
      WEFT_GUARDED_BY(mu_);
};

// Whether tensors on `device` live in host memory, so members on such devices can share one output
// buffer (DeviceBase::HasHostMemory).
bool SharesHostMemory(const DeviceBase* device);

}  // namespace weft
