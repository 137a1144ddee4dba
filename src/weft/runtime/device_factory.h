// DeviceFactory: makes the devices of one type for a process (or a worker task); a
// DeviceFactoryRegistry maps device types ("CPU", "TEST_ARENA") to their factories, and
// CreateLocalDevices (device_mgr.h) builds what a ConfigProto's device_count asks for through it.
// Factories are registered explicitly, like kernels: RegisterCpuDeviceFactory for Weft's own, a
// test adds its test device. Register before use (not thread-safe); lookups and CreateDevices are
// safe from any thread afterwards.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/runtime/device.h"

namespace weft {

struct DeviceFactoryOptions {
  // Devices are named name_prefix + "/device:<TYPE>:<i>", i = 0 .. count-1.
  std::string name_prefix = "/job:localhost/replica:0/task:0";
  int count = 1;
  int intra_op_threads = 1;  // each device's share (>= 1)
};

class DeviceFactory {
 public:
  virtual ~DeviceFactory() = default;
  // `options.count` new devices; errors name the device type.
  virtual StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(
      const DeviceFactoryOptions& options) const = 0;
};

class DeviceFactoryRegistry {
 public:
  DeviceFactoryRegistry() = default;
  DeviceFactoryRegistry(const DeviceFactoryRegistry&) = delete;
  DeviceFactoryRegistry& operator=(const DeviceFactoryRegistry&) = delete;

  // AlreadyExists naming the type when it has a factory.
  Status Register(const std::string& device_type, std::unique_ptr<DeviceFactory> factory);
  // Null when no factory makes `device_type`.
  const DeviceFactory* Find(std::string_view device_type) const;
  // The registered types, sorted.
  std::vector<std::string> DeviceTypes() const;
  // OK when a factory makes `device_type`; else InvalidArgument naming it and the registered types.
  Status CheckDeviceType(std::string_view device_type) const;

 private:
  std::map<std::string, std::unique_ptr<DeviceFactory>, std::less<>> factories_;
};

// Registers the factory of CpuDevice for "CPU".
void RegisterCpuDeviceFactory(DeviceFactoryRegistry& registry);

// The registry of Weft's own devices (CPU), built once (thread-safe).
const DeviceFactoryRegistry& DefaultDeviceFactories();

}  // namespace weft
