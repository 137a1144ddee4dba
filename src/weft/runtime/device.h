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

// Whether a session's view of a device has resources of its own or uses the device's.
enum class SessionState { kIsolated, kShared };

// A view of `base` for one session of a worker shared by several: the same name, type,
// incarnation, intra-op threads, allocator and device context; with kIsolated a resource manager
// of its own, so sessions do not see each other's variables, with kShared `base`'s, so every
// sharing session sees the variables and they outlive the session. `base` must outlive it.
std::unique_ptr<Device> NewSessionDevice(const Device& base,
                                         SessionState state = SessionState::kIsolated);

}  // namespace weft
