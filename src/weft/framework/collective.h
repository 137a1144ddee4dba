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
#include "weft/core/tensor_shape.h"

namespace weft {

class DeviceBase;

// The reduction of one instance of a collective, as its kernels describe it.
struct CollectiveParams {
  int64_t group_key = 0;     // which devices take part (same key, same group)
  int32_t group_size = 0;    // how many members must join before the reduction runs
  int64_t instance_key = 0;  // which collective of the step this is
  std::string merge_op;      // all-reduce: "Add" (the only one today)
  std::string final_op;      // all-reduce: "Id" or "Div" (divide by group_size: a mean)
};

class CollectiveExecutor {
 public:
  virtual ~CollectiveExecutor() = default;

  // All-reduces `inputs` (one member's tensors: same count, dtypes and shapes in every member)
  // into `outputs` (resized to match). Calls `done` once every member of the instance has joined
  // and its outputs are ready, or with an error naming the instance (mismatched members, abort).
  virtual void AllReduceAsync(const CollectiveParams& params, DeviceBase* device,
                              std::vector<Tensor> inputs, std::vector<Tensor>* outputs,
                              StatusCallback done) = 0;
  // Copies the source member's `*value` into every other member's `*value`. The source (exactly
  // one member, `is_source`) reads `*value`; the others get a tensor of the source's dtype and
  // shape, which must equal `expected_dtype` and `expected_shape` (their kernel's attrs) or every
  // member fails with InvalidArgument naming both members.
  virtual void BroadcastAsync(const CollectiveParams& params, DeviceBase* device, bool is_source,
                              DataType expected_dtype, const TensorShape& expected_shape,
                              Tensor* value, StatusCallback done) = 0;
  // `*output` is every member's `input` (same dtype and shape in every member, at least one
  // dimension) concatenated along dimension 0 in member order (the order of the group's devices:
  // task, then device name).
  virtual void AllGatherAsync(const CollectiveParams& params, DeviceBase* device, Tensor input,
                              Tensor* output, StatusCallback done) = 0;
  // Fails every pending and future collective of the step with `status`.
  virtual void StartAbort(const Status& status) = 0;
};

}  // namespace weft
