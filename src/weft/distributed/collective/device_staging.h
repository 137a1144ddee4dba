// Device staging for collectives across tasks: the transports move host memory only, so a member
// whose device has memory of its own has its tensors copied to host memory (through the device's
// DeviceContext) before the transport runs, and the results copied back into the device's memory
// before the member's callback. Copies are asynchronous; each helper calls `done` exactly once, on
// whichever thread finished last. Thread-safe.
#pragma once

#include <functional>
#include <vector>

#include "weft/core/status.h"
#include "weft/core/tensor.h"
#include "weft/framework/device_base.h"

namespace weft {

// Copies every tensor of `sources` (in `device`'s memory) into freshly allocated host tensors,
// then calls `done` with them, or with the first error (naming the device).
void CopyToHostAsync(DeviceBase* device, const std::vector<Tensor>& sources,
                     std::function<void(const Status&, std::vector<Tensor>)> done);
// Copies every host tensor of `sources` into freshly allocated tensors of `device`'s memory, then
// calls `done` with them, or with the first error (naming the device).
void CopyToDeviceAsync(DeviceBase* device, const std::vector<Tensor>& sources,
                       std::function<void(const Status&, std::vector<Tensor>)> done);

}  // namespace weft
