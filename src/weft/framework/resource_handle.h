// ResourceHandle: names one per-device resource (a variable, later a queue or an iterator) by the
// device that holds it, a container and a name, with the dtype and declared shape of what it
// holds. Handles travel through graphs as resource tensors: a scalar Tensor of
// DataType::kResource whose buffer holds exactly one ResourceHandle (built with
// MakeResourceHandleTensor, read back with HandleFromTensor). A handle is a value type; a resource
// tensor is immutable once made, so it may be shared between threads for reading.
#pragma once

#include <string>

#include "weft/core/statusor.h"
#include "weft/core/tensor.h"
#include "weft/framework/partial_shape.h"

namespace weft {

struct ResourceHandle {
  std::string device;     // full device name, e.g. "/job:localhost/replica:0/task:0/device:CPU:0"
  std::string container;  // "" is the default container
  std::string name;       // unique within (device, container)
  DataType dtype = DataType::kInvalid;  // dtype of the value the resource holds
  PartialShape shape;                   // declared shape; unknown rank when not declared

  // "resource 'name' in container 'c' on /job:...".
  std::string DebugString() const;
};

// A scalar kResource tensor holding a copy of `handle`.
Tensor MakeResourceHandleTensor(ResourceHandle handle);

// The handle inside a tensor made by MakeResourceHandleTensor. InvalidArgument when `tensor` is
// not a scalar resource tensor or its buffer holds no handle. The pointer lives as long as the
// tensor's buffer.
StatusOr<const ResourceHandle*> HandleFromTensor(const Tensor& tensor);

}  // namespace weft
