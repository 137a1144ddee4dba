#include "weft/runtime/device_mgr.h"

#include <gtest/gtest.h>

#include "weft/testing/test_arena_device.h"

namespace weft {
namespace {

proto::ConfigProto Cpus(int count) {
  proto::ConfigProto config;
  (*config.mutable_device_count())["CPU"] = count;
  return config;
}

TEST(DeviceMgrTest, CreatesNamedCpuDevicesSharingTheThreads) {
  auto devices = CreateLocalDevices(Cpus(4), /*intra_op_threads=*/8);
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ((*devices)->NumDevices(), 4);
  for (int i = 0; i < 4; ++i) {
    Device* device = (*devices)->ListDevices()[i];
    EXPECT_EQ(device->name(), "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(i));
    EXPECT_EQ(device->device_type(), "CPU");
    EXPECT_EQ(device->intra_op_threads(), 2);
  }
  // Each device is created afresh: its own incarnation and resource manager.
  EXPECT_NE((*devices)->ListDevices()[0]->incarnation(),
            (*devices)->ListDevices()[1]->incarnation());
  EXPECT_NE((*devices)->ListDevices()[0]->resource_manager(),
            (*devices)->ListDevices()[1]->resource_manager());

  auto crowded = CreateLocalDevices(Cpus(4), /*intra_op_threads=*/2);
  ASSERT_TRUE(crowded.ok());
  EXPECT_EQ((*crowded)->ListDevices()[3]->intra_op_threads(), 1);  // never zero
}

TEST(DeviceMgrTest, DefaultIsOneCpuInTheRequestedTask) {
  auto devices = CreateLocalDevices(proto::ConfigProto(), 2, "worker", 3);
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ((*devices)->NumDevices(), 1);
  EXPECT_EQ((*devices)->ListDevices()[0]->name(), "/job:worker/replica:0/task:3/device:CPU:0");
}

TEST(DeviceMgrTest, LooksUpFullPartialAndLegacyNames) {
  auto devices = CreateLocalDevices(Cpus(2), 2);
  ASSERT_TRUE(devices.ok());
  const DeviceMgr& mgr = **devices;
  for (const char* spec :
       {"/job:localhost/replica:0/task:0/device:CPU:1", "/device:CPU:1", "/cpu:1", "/CPU:1"}) {
    StatusOr<Device*> found = mgr.LookupDevice(spec);
    ASSERT_TRUE(found.ok()) << spec << ": " << found.status();
    EXPECT_EQ((*found)->name(), "/job:localhost/replica:0/task:0/device:CPU:1") << spec;
  }
  StatusOr<Device*> missing = mgr.LookupDevice("/device:CPU:7");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(IsNotFound(missing.status()));
  EXPECT_NE(missing.status().message().find("/device:CPU:7"), std::string::npos);
  EXPECT_NE(missing.status().message().find("device:CPU:1"), std::string::npos);  // lists them

  StatusOr<Device*> ambiguous = mgr.LookupDevice("/job:localhost");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(ambiguous.status().message().find("more than one"), std::string::npos);

  StatusOr<Device*> garbage = mgr.LookupDevice("not a device");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("not a device"), std::string::npos);
}

TEST(DeviceMgrTest, RefusesDevicesItCannotCreate) {
  proto::ConfigProto gpus;
  (*gpus.mutable_device_count())["GPU"] = 1;
  auto no_gpu = CreateLocalDevices(gpus, 2);
  ASSERT_FALSE(no_gpu.ok());
  EXPECT_NE(no_gpu.status().message().find("GPU"), std::string::npos);

  auto negative = CreateLocalDevices(Cpus(-1), 2);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("-1"), std::string::npos);

  auto none = CreateLocalDevices(Cpus(0), 2);
  ASSERT_FALSE(none.ok());

  // Only registered factories make devices; the error lists them.
  proto::ConfigProto arenas = Cpus(1);
  (*arenas.mutable_device_count())[testing::kTestArenaDeviceType] = 1;
  auto default_types = CreateLocalDevices(arenas, 2);
  ASSERT_FALSE(default_types.ok());
  EXPECT_NE(default_types.status().message().find("TEST_ARENA"), std::string::npos);
  EXPECT_NE(default_types.status().message().find("registered types: CPU"), std::string::npos)
      << default_types.status();

  proto::ConfigProto zero_gpus = Cpus(2);
  (*zero_gpus.mutable_device_count())["GPU"] = 0;  // asking for none of a type is fine
  EXPECT_TRUE(CreateLocalDevices(zero_gpus, 2).ok());
}

TEST(DeviceMgrTest, AnUnknownDeviceTypeIsNamedWithTheRegisteredOnes) {
  EXPECT_TRUE(DefaultDeviceFactories().CheckDeviceType("CPU").ok());
  Status xpu = testing::TestArenaDeviceFactories().CheckDeviceType("XPU");
  EXPECT_TRUE(IsInvalidArgument(xpu)) << xpu;
  EXPECT_NE(xpu.message().find("unknown device type 'XPU'"), std::string::npos) << xpu;
  EXPECT_NE(xpu.message().find("registered types: CPU, TEST_ARENA"), std::string::npos) << xpu;
}

TEST(DeviceMgrTest, RegisteredFactoriesMakeTheirDevicesAfterTheCpus) {
  proto::ConfigProto config;
  (*config.mutable_device_count())[testing::kTestArenaDeviceType] = 2;
  auto devices = CreateLocalDevices(config, /*intra_op_threads=*/3, "worker", 1,
                                    testing::TestArenaDeviceFactories());
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ((*devices)->NumDevices(), 3);
  const std::vector<Device*>& list = (*devices)->ListDevices();
  EXPECT_EQ(list[0]->name(), "/job:worker/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(list[1]->name(), "/job:worker/replica:0/task:1/device:TEST_ARENA:0");
  EXPECT_EQ(list[2]->name(), "/job:worker/replica:0/task:1/device:TEST_ARENA:1");
  EXPECT_TRUE(list[0]->HasHostMemory());
  EXPECT_EQ(list[0]->device_context(), nullptr);
  EXPECT_FALSE(list[1]->HasHostMemory());
  EXPECT_NE(list[1]->device_context(), nullptr);
  EXPECT_NE(list[1]->GetAllocator(), list[2]->GetAllocator());  // two memories
  EXPECT_EQ(list[1]->GetAllocator({.on_host = true}), HostAllocator());
  EXPECT_EQ(list[1]->intra_op_threads(), 1);
  ASSERT_NE(list[1]->intra_op_pool(), nullptr);
  // A session's view of a device keeps its memory.
  std::unique_ptr<Device> view = NewSessionDevice(*list[1]);
  EXPECT_EQ(view->GetAllocator(), list[1]->GetAllocator());
  EXPECT_EQ(view->device_context(), list[1]->device_context());
}

}  // namespace
}  // namespace weft
