// CollectiveExecutor: the interface through which collective kernels (the all-reduce of a
// MirroredStrategy's gradients) meet the other members of their group in one step. Members are
// kernels on different devices, each in its own partition's executor; the runtime provides one
// CollectiveExecutor per step, shared by every partition of that step. Implementations are
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "weft/core/status.h"
#include "weft/core/tensor.h"

namespace weft {

class DeviceBase;

// The reduction of one instance of a collective, as its kernels describe it.
struct CollectiveParams {
  int64_t group_key = 0;     // which devices take part (same key, same group)
  int32_t group_size = 0;    // how many members must join before the reduction runs
  int64_t instance_key = 0;  // which collective of the step this is
  std::string merge_op;      // "Add" (the only one today)
  std::string final_op;      // "Id" or "Div" (divide by group_size: a mean)
};

class CollectiveExecutor {
 public:
  using DoneCallback = std::function<void(const Status&)>;

  virtual ~CollectiveExecutor() = default;

  // All-reduces `inputs` (one member's tensors: same count, dtypes and shapes in every member)
  // into `outputs` (resized to match). Calls `done` once every member of the instance has joined
  // and its outputs are ready, or with an error naming the instance (mismatched members, abort).
  virtual void AllReduce(const CollectiveParams& params, DeviceBase* device,
                         std::vector<Tensor> inputs, std::vector<Tensor>* outputs,
                         DoneCallback done) = 0;
  // Fails every pending and future collective of the step with `status`.
  virtual void StartAbort(const Status& status) = 0;
};

}  // namespace weft
