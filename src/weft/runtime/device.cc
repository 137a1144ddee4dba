#include "weft/runtime/device.h"

#include <mutex>
#include <random>

namespace weft {
namespace {

uint64_t NewIncarnation() {
  static std::mt19937_64 generator{std::random_device{}()};
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  uint64_t value = 0;
  while (value == 0) value = generator();
  return value;
}

}  // namespace

Device::Device(std::string name, std::string device_type)
    : DeviceBase(std::move(name), std::move(device_type)), incarnation_(NewIncarnation()) {}

}  // namespace weft
