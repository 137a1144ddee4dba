// TEST_ARENA: a test-only device type whose memory is an arena of its own, so the runtime's memory
// seam (allocators, DeviceContext copies, host-memory args) is exercised without an accelerator.
// Its memory is host-addressable, so it runs the CPU kernels, but the runtime must treat it as a
// separate memory space: every tensor entering or leaving it goes through its DeviceContext, which
// checks that source and destination are in the memories the copy claims and counts each copy and
// its bytes (process-wide, read with GetArenaCopyStats). It has an asynchronous stream: kernels and
// copies run in order on a thread of its own, and blocks freed off that thread are released in
// stream order, so the executor's ordering on streams is exercised without an accelerator.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "weft/framework/kernel_registry.h"
#include "weft/runtime/device.h"
#include "weft/runtime/device_factory.h"
#include "weft/runtime/session.h"

namespace weft::testing {

inline constexpr char kTestArenaDeviceType[] = "TEST_ARENA";

struct ArenaCopyStats {
  int64_t host_to_device = 0;
  int64_t device_to_host = 0;
  int64_t device_to_device = 0;
  int64_t bytes = 0;  // over all three
  int64_t total() const { return host_to_device + device_to_host + device_to_device; }
};
// The copies made by every TEST_ARENA device of the process since the last reset.
ArenaCopyStats GetArenaCopyStats();
void ResetArenaCopyStats();

// A TEST_ARENA device named `name` with `intra_op_threads` threads and an arena of its own.
std::unique_ptr<Device> NewTestArenaDevice(const std::string& name, int intra_op_threads = 1);

// Registers the TEST_ARENA device factory.
void RegisterTestArenaDeviceFactory(DeviceFactoryRegistry& registry);
// CPU and TEST_ARENA devices; built once.
const DeviceFactoryRegistry& TestArenaDeviceFactories();
// Every kernel of Weft, with the CPU kernels registered for TEST_ARENA as well; built once.
const KernelRegistry& TestArenaKernels();

// Options for an in-process session with one CPU (CPU:0, the default device) and `arena_devices`
// TEST_ARENA devices, when `device_type` is TEST_ARENA; with `arena_devices` CPUs when it is CPU.
SessionOptions SessionOptionsFor(const std::string& device_type, int devices);

}  // namespace weft::testing
