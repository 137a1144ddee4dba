// Device staging (see the header): one shared record per batch of copies, finished by the last
// copy to complete.
#include "weft/distributed/collective/device_staging.h"

#include <memory>
#include <utility>

#include "weft/core/allocator.h"
#include "weft/core/mutex.h"
#include "weft/core/str_util.h"

namespace weft {
namespace {

using CopiedFn = std::function<void(const Status&, std::vector<Tensor>)>;

// The batch's copies in flight; the last one to finish calls `done`.
struct Batch {
  std::vector<Tensor> sources;  // kept alive until every copy finished
  std::vector<Tensor> copies;
  CopiedFn done;
  Mutex mu;
  size_t pending WEFT_GUARDED_BY(mu) = 0;
  Status status WEFT_GUARDED_BY(mu);
};

void Finished(const std::shared_ptr<Batch>& batch, const Status& status) {
  Status result;
  {
    MutexLock lock(batch->mu);
    if (batch->status.ok() && !status.ok()) batch->status = status;
    if (--batch->pending > 0) return;
    result = batch->status;
  }
  batch->done(result, result.ok() ? std::move(batch->copies) : std::vector<Tensor>());
}

void CopyAllAsync(DeviceBase* device, const std::vector<Tensor>& sources, bool to_device,
                  CopiedFn done) {
  const char* direction = to_device ? "to" : "from";
  DeviceContext* context = device->device_context();
  if (context == nullptr) {
    done(FailedPrecondition("copying a collective's tensors ", direction, " device '",
                            device->name(), "': it has memory of its own but no DeviceContext"),
         {});
    return;
  }
  auto batch = std::make_shared<Batch>();
  batch->sources = sources;
  batch->done = std::move(done);
  Allocator* allocator = to_device ? device->GetAllocator() : HostAllocator();
  for (const Tensor& source : sources) {
    StatusOr<Tensor> copy = Tensor::Allocate(allocator, source.dtype(), source.shape());
    if (!copy.ok()) {
      batch->done(copy.status().WithContext(StrCat("staging a collective's tensor ", direction,
                                                   " device '", device->name(), "'")),
                  {});
      return;
    }
    batch->copies.push_back(std::move(copy).value());
  }
  {
    MutexLock lock(batch->mu);
    // One more than the copies: the loop below holds the batch open until every copy started.
    batch->pending = sources.size() + 1;
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    auto copied = [batch, device, direction](const Status& status) {
      Finished(batch, status.WithContext(StrCat("copying a collective's tensor ", direction,
                                                " device '", device->name(), "'")));
    };
    if (to_device) {
      context->CopyCPUTensorToDeviceAsync(&batch->sources[i], device, &batch->copies[i], copied);
    } else {
      context->CopyDeviceTensorToCPUAsync(&batch->sources[i], device, &batch->copies[i], copied);
    }
  }
  Finished(batch, Status::OK());
}

}  // namespace

void CopyToHostAsync(DeviceBase* device, const std::vector<Tensor>& sources, CopiedFn done) {
  CopyAllAsync(device, sources, /*to_device=*/false, std::move(done));
}

void CopyToDeviceAsync(DeviceBase* device, const std::vector<Tensor>& sources, CopiedFn done) {
  CopyAllAsync(device, sources, /*to_device=*/true, std::move(done));
}

}  // namespace weft
