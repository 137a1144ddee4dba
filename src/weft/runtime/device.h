// Device: a place where kernels run, named in full ("/job:localhost/replica:0/task:0/device:CPU:0")
// with an incarnation number that changes each time the device is created (so a restarted worker
// is told apart). Immutable after construction; safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "weft/framework/device_base.h"

namespace weft {

class Device : public DeviceBase {
 public:
  Device(std::string name, std::string device_type);
  uint64_t incarnation() const { return incarnation_; }

 protected:
  Device(std::string name, std::string device_type, uint64_t incarnation);

 private:
  const uint64_t incarnation_;
};

// A view of `base` for one session of a worker shared by several: the same name, type,
// incarnation, intra-op threads, allocator and device context, but a resource manager of its own,
// so sessions do not see each other's variables. `base` must outlive it.
std::unique_ptr<Device> NewSessionDevice(const Device& base);

}  // namespace weft
