// DeviceMgr: owns the devices of one process (or one worker task) and finds them by name.
// CreateLocalDevices builds the devices a ConfigProto asks for through the registered
// DeviceFactorys, each with its own share of the intra-op threads and its own resource manager.
// Immutable after construction; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/config.pb.h"
#include "weft/core/status.h"
#include "weft/runtime/device.h"
#include "weft/runtime/device_factory.h"

namespace weft {

class DeviceMgr {
 public:
  explicit DeviceMgr(std::vector<std::unique_ptr<Device>> devices);
  DeviceMgr(const DeviceMgr&) = delete;
  DeviceMgr& operator=(const DeviceMgr&) = delete;

  // In creation order; the first is the default device.
  const std::vector<Device*>& ListDevices() const { return device_list_; }
  int NumDevices() const { return static_cast<int>(device_list_.size()); }

  // The device with this full name, or else the one device a partial or legacy spec ("/cpu:1",
  // "/device:CPU:1") matches. NotFound names the spec and lists the devices; a spec matching
  // several devices is InvalidArgument.
  StatusOr<Device*> LookupDevice(std::string_view name) const;

 private:
  const std::vector<std::unique_ptr<Device>> devices_;
  std::vector<Device*> device_list_;
};

// The devices `config` asks for in task `task` of `job`, made by `factories`: device_count["CPU"]
// CPU devices (default 1, the first is CPU:0) and then device_count[type] of each other type, in
// type order, named /job:<job>/replica:0/task:<task>/device:<TYPE>:<i>. `intra_op_threads` (> 0)
// are shared among them, at least one each. A type no factory makes (naming it and the registered
// types), a negative count or no CPU is InvalidArgument.
StatusOr<std::unique_ptr<DeviceMgr>> CreateLocalDevices(
    const proto::ConfigProto& config, int intra_op_threads, std::string_view job = "localhost",
    int task = 0, const DeviceFactoryRegistry& factories = DefaultDeviceFactories());

}  // namespace weft
