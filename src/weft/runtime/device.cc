#include "weft/runtime/device.h"

#include <random>

#include "weft/core/mutex.h"

namespace weft {
namespace {

uint64_t NewIncarnation() {
  static std::mt19937_64 generator{std::random_device{}()};
  static Mutex mu;
  MutexLock lock(mu);
  uint64_t value = 0;
  while (value == 0) value = generator();
  return value;
}

class SessionDevice final : public Device {
 public:
  SessionDevice(const Device& base, SessionState state)
      : Device(base.name(), base.device_type(), base.incarnation()) {
    set_intra_op_threads(base.intra_op_pool(), base.eigen_cpu_device(), base.intra_op_threads());
    set_memory(base.GetAllocator(), base.device_context());
    if (state == SessionState::kShared) share_resource_manager(base.resource_manager());
  }
};

}  // namespace

Device::Device(std::string name, std::string device_type)
    : Device(std::move(name), std::move(device_type), NewIncarnation()) {}

Device::Device(std::string name, std::string device_type, uint64_t incarnation)
    : DeviceBase(std::move(name), std::move(device_type)), incarnation_(incarnation) {}

std::unique_ptr<Device> NewSessionDevice(const Device& base, SessionState state) {
  return std::make_unique<SessionDevice>(base, state);
}

}  // namespace weft
