#include "weft/runtime/device_mgr.h"

#include <algorithm>
#include <map>

#include "weft/core/cpu_support.h"
#include "weft/core/str_util.h"
#include "weft/framework/device_name_utils.h"

namespace weft {

DeviceMgr::DeviceMgr(std::vector<std::unique_ptr<Device>> devices) : devices_(std::move(devices)) {
  for (const auto& device : devices_) device_list_.push_back(device.get());
}

StatusOr<Device*> DeviceMgr::LookupDevice(std::string_view name) const {
  for (Device* device : device_list_) {
    if (device->name() == name) return device;
  }
  StatusOr<ParsedDeviceName> spec = ParseDeviceName(name);
  if (!spec.ok()) return spec.status();
  Device* found = nullptr;
  for (Device* device : device_list_) {
    StatusOr<ParsedDeviceName> parsed = ParseDeviceName(device->name());
    if (!parsed.ok() || !IsSpecification(*spec, *parsed)) continue;
    if (found != nullptr) {
      return InvalidArgument("device spec '", name, "' matches more than one device (",
                             found->name(), " and ", device->name(), ")");
    }
    found = device;
  }
  if (found == nullptr) {
    std::vector<std::string> names;
    for (Device* device : device_list_) names.push_back(device->name());
    return NotFound("no device matches '", name, "'; devices: ", StrJoin(names, ", "));
  }
  return found;
}

StatusOr<std::unique_ptr<DeviceMgr>> CreateLocalDevices(const proto::ConfigProto& config,
                                                        int intra_op_threads, std::string_view job,
                                                        int task,
                                                        const DeviceFactoryRegistry& factories) {
  WEFT_RETURN_IF_ERROR(CheckCpuSupportsBuild());
  // CPU first (the default device), then the other types in name order.
  std::map<std::string, int> counts = {{"CPU", 1}};
  for (const auto& [type, count] : config.device_count()) {
    if (count < 0) {
      return InvalidArgument("device_count[\"", type, "\"] is ", count, "; it must be >= 0");
    }
    if (count > 0 && factories.Find(type) == nullptr) {
      return InvalidArgument("device_count asks for ", count, " ", type,
                             " device(s), but no device factory makes type ", type,
                             "; registered types: ", StrJoin(factories.DeviceTypes(), ", "));
    }
    counts[type] = count;
  }
  if (counts["CPU"] == 0) {
    return InvalidArgument("device_count[\"CPU\"] is 0; at least one CPU is needed");
  }
  int total = 0;
  for (const auto& [type, count] : counts) total += count;
  DeviceFactoryOptions options;
  options.name_prefix = StrCat("/job:", job, "/replica:0/task:", task);
  options.intra_op_threads = std::max(1, intra_op_threads / total);
  std::vector<std::unique_ptr<Device>> devices;
  auto create = [&](const std::string& type, int count) -> Status {
    const DeviceFactory* factory = factories.Find(type);
    if (count == 0 || factory == nullptr) return Status::OK();
    options.count = count;
    WEFT_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Device>> made,
                          factory->CreateDevices(options));
    for (auto& device : made) devices.push_back(std::move(device));
    return Status::OK();
  };
  WEFT_RETURN_IF_ERROR(create("CPU", counts["CPU"]));
  for (const auto& [type, count] : counts) {
    if (type != "CPU") WEFT_RETURN_IF_ERROR(create(type, count));
  }
  return std::make_unique<DeviceMgr>(std::move(devices));
}

}  // namespace weft
