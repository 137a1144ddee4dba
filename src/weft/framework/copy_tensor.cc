#include "weft/framework/copy_tensor.h"

#include <memory>
#include <utility>

#include "weft/core/notification.h"
#include "weft/framework/device_base.h"

namespace weft {
namespace {

std::string DeviceName(const DeviceBase* device) { return device ? device->name() : "the host"; }

}  // namespace

void CopyTensorAsync(DeviceBase* src_device, DeviceBase* dst_device,
                     AllocatorAttributes dst_attributes, const Tensor& input,
                     CopyDoneCallback done) {
  Allocator* dst_allocator =
      dst_device == nullptr ? HostAllocator() : dst_device->GetAllocator(dst_attributes);
  Allocator* src_allocator = input.allocator();
  if (input.buffer() == nullptr || SameMemorySpace(src_allocator, dst_allocator)) {
    done(Status::OK(), input);
    return;
  }
  StatusOr<Tensor> output = Tensor::Allocate(dst_allocator, input.dtype(), input.shape());
  if (!output.ok()) {
    done(output.status().WithContext(StrCat("copying a tensor to ", DeviceName(dst_device))),
         Tensor());
    return;
  }
  // Both tensors stay alive until the copy is done.
  auto tensors = std::make_shared<std::pair<Tensor, Tensor>>(input, std::move(output).value());
  auto finish = [tensors, done = std::move(done)](const Status& status) {
    if (!status.ok()) {
      done(status, Tensor());
      return;
    }
    done(Status::OK(), std::move(tensors->second));
  };
  if (input.IsInHostMemory()) {
    DeviceContext* context = dst_device->device_context();
    if (context == nullptr) {
      finish(Internal("device ", dst_device->name(), " has memory of its own (allocator ",
                      dst_allocator->Name(), ") but no DeviceContext to copy into it"));
      return;
    }
    context->CopyCPUTensorToDeviceAsync(&tensors->first, dst_device, &tensors->second,
                                        std::move(finish));
    return;
  }
  // The source is in a device's own memory: only that device can copy it out.
  if (src_device == nullptr || src_device->GetAllocator() != src_allocator ||
      src_device->device_context() == nullptr) {
    finish(Internal("a tensor in the memory of allocator ", src_allocator->Name(),
                    " cannot be copied to ", DeviceName(dst_device), " by ", DeviceName(src_device),
                    ", which does not own that memory"));
    return;
  }
  DeviceContext* context = src_device->device_context();
  if (dst_allocator->memory_type() == MemoryType::kHost) {
    context->CopyDeviceTensorToCPUAsync(&tensors->first, src_device, &tensors->second,
                                        std::move(finish));
  } else {
    context->CopyDeviceTensorToDeviceAsync(&tensors->first, dst_device, &tensors->second,
                                           std::move(finish));
  }
}

StatusOr<Tensor> CopyTensor(DeviceBase* src_device, DeviceBase* dst_device,
                            AllocatorAttributes dst_attributes, const Tensor& input) {
  Notification copied;
  Status status;
  Tensor output;
  CopyTensorAsync(src_device, dst_device, dst_attributes, input,
                  [&](const Status& copy_status, Tensor copy) {
                    status = copy_status;
                    output = std::move(copy);
                    copied.Notify();
                  });
  copied.WaitForNotification();
  WEFT_RETURN_IF_ERROR(status);
  return output;
}

}  // namespace weft
