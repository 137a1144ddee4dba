// CopyTensorAsync: moves a tensor into the memory a consumer wants, copying only when the tensor
// lives in another memory space (see SameMemorySpace): host tensors pass between host-memory
// devices as they are, and a copy goes through the DeviceContext of the device that owns the
// non-host memory (host->device by the destination's, device->host and device->device by the
// source's). Used by _Recv, the collectives and the bulk path. Stateless; safe from any thread.
#pragma once

#include <functional>

#include "weft/core/allocator.h"
#include "weft/core/statusor.h"
#include "weft/core/tensor.h"

namespace weft {

class DeviceBase;

using CopyDoneCallback = std::function<void(const Status& status, Tensor output)>;

// Calls `done` with `input` itself when it already lives where `dst_device` puts tensors of
// `dst_attributes` (host memory when `dst_device` is null), else with a copy in that memory once
// the copy has finished. `src_device` is the device whose memory holds `input` when that is not
// host memory (may be null otherwise). Errors name the devices; `done` may run before this returns.
void CopyTensorAsync(DeviceBase* src_device, DeviceBase* dst_device,
                     AllocatorAttributes dst_attributes, const Tensor& input,
                     CopyDoneCallback done);

// The blocking form, for callers that have no continuation (a kernel's constructor).
StatusOr<Tensor> CopyTensor(DeviceBase* src_device, DeviceBase* dst_device,
                            AllocatorAttributes dst_attributes, const Tensor& input);

}  // namespace weft
