#include "weft/framework/resource_handle.h"

#include <memory>

namespace weft {
namespace {

// The buffer of a resource tensor: one ResourceHandle object, not raw bytes, so that copying the
// tensor shares the handle and freeing the buffer destroys it properly.
class ResourceHandleBuffer final : public TensorBuffer {
 public:
  explicit ResourceHandleBuffer(ResourceHandle handle) : handle_(std::move(handle)) {}
  void* data() const override { return const_cast<ResourceHandle*>(&handle_); }
  size_t size() const override { return sizeof(ResourceHandle); }
  const ResourceHandle& handle() const { return handle_; }

 private:
  ResourceHandle handle_;
};

}  // namespace

std::string ResourceHandle::DebugString() const {
  return StrCat("resource '", name, "' in container '", container, "' on ",
                device.empty() ? "<no device>" : device);
}

Tensor MakeResourceHandleTensor(ResourceHandle handle) {
  static_assert(sizeof(ResourceHandle) >= 8, "kResource elements are 8 bytes");
  return Tensor(DataType::kResource, TensorShape(),
                std::make_unique<ResourceHandleBuffer>(std::move(handle)));
}

StatusOr<const ResourceHandle*> HandleFromTensor(const Tensor& tensor) {
  if (tensor.dtype() != DataType::kResource) {
    return InvalidArgument("expected a resource tensor, got ", DataTypeName(tensor.dtype()));
  }
  if (tensor.dims() != 0) {
    return InvalidArgument("expected a scalar resource tensor, got shape ", tensor.shape());
  }
  const auto* buffer = dynamic_cast<const ResourceHandleBuffer*>(tensor.buffer());
  if (buffer == nullptr) {
    return InvalidArgument("resource tensor holds no resource handle");
  }
  return &buffer->handle();
}

}  // namespace weft
