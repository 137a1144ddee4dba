#include "weft/runtime/device_factory.h"

#include "weft/core/str_util.h"
#include "weft/runtime/cpu_device.h"

namespace weft {
namespace {

class CpuDeviceFactory final : public DeviceFactory {
 public:
  StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(
      const DeviceFactoryOptions& options) const override {
    std::vector<std::unique_ptr<Device>> devices;
    for (int i = 0; i < options.count; ++i) {
      devices.push_back(std::make_unique<CpuDevice>(StrCat(options.name_prefix, "/device:CPU:", i),
                                                    options.intra_op_threads));
    }
    return devices;
  }
};

}  // namespace

Status DeviceFactoryRegistry::Register(const std::string& device_type,
                                       std::unique_ptr<DeviceFactory> factory) {
  if (factories_.contains(device_type)) {
    return AlreadyExists("a device factory for type ", device_type, " is already registered");
  }
  factories_.emplace(device_type, std::move(factory));
  return Status::OK();
}

const DeviceFactory* DeviceFactoryRegistry::Find(std::string_view device_type) const {
  auto it = factories_.find(device_type);
  return it == factories_.end() ? nullptr : it->second.get();
}

std::vector<std::string> DeviceFactoryRegistry::DeviceTypes() const {
  std::vector<std::string> types;
  for (const auto& [type, factory] : factories_) types.push_back(type);
  return types;
}

Status DeviceFactoryRegistry::CheckDeviceType(std::string_view device_type) const {
  if (Find(device_type) != nullptr) return Status::OK();
  return InvalidArgument(
      "unknown device type '", device_type,
      "': no device factory makes it; registered types: ", StrJoin(DeviceTypes(), ", "));
}

void RegisterCpuDeviceFactory(DeviceFactoryRegistry& registry) {
  WEFT_CHECK(registry.Register("CPU", std::make_unique<CpuDeviceFactory>()).ok())
      << "CPU registered twice";
}

const DeviceFactoryRegistry& DefaultDeviceFactories() {
  static const DeviceFactoryRegistry* const registry = [] {
    auto* r = new DeviceFactoryRegistry();
    RegisterCpuDeviceFactory(*r);
    return r;
  }();
  return *registry;
}

}  // namespace weft
