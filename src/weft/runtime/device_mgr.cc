#include "weft/runtime/device_mgr.h"

#include <algorithm>

#include "weft/core/str_util.h"
#include "weft/framework/device_name_utils.h"
#include "weft/runtime/cpu_device.h"

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
                                                        int task) {
  int cpus = 1;
  for (const auto& [type, count] : config.device_count()) {
    if (count < 0) {
      return InvalidArgument("device_count[\"", type, "\"] is ", count, "; it must be >= 0");
    }
    if (type == "CPU") {
      cpus = count;
    } else if (count > 0) {
      return InvalidArgument("device_count asks for ", count, " ", type,
                             " device(s), but this build of Weft has only CPU devices");
    }
  }
  if (cpus == 0) return InvalidArgument("device_count[\"CPU\"] is 0; at least one CPU is needed");
  const int threads_each = std::max(1, intra_op_threads / cpus);
  std::vector<std::unique_ptr<Device>> devices;
  for (int i = 0; i < cpus; ++i) {
    devices.push_back(std::make_unique<CpuDevice>(
        StrCat("/job:", job, "/replica:0/task:", task, "/device:CPU:", i), threads_each));
  }
  return std::make_unique<DeviceMgr>(std::move(devices));
}

}  // namespace weft
