// Test helpers for the distribute layer: device names of a local multi-device session, and running
// a built graph in a DirectSession with that many CPU (or TEST_ARENA, see
// testing/test_arena_device.h) devices.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/str_util.h"
#include "weft/graph/builder/scope.h"
#include "weft/runtime/session.h"
#include "weft/testing/test_arena_device.h"

namespace weft::distribute::testing {

inline std::string CpuDevice(int i) {
  return StrCat("/job:localhost/replica:0/task:0/device:CPU:", i);
}

inline std::vector<std::string> CpuDevices(int n) {
  std::vector<std::string> devices;
  for (int i = 0; i < n; ++i) devices.push_back(CpuDevice(i));
  return devices;
}

// "/job:localhost/replica:0/task:0/device:<type>:<i>" for i < n.
inline std::vector<std::string> Devices(const std::string& type, int n) {
  std::vector<std::string> devices;
  for (int i = 0; i < n; ++i) {
    devices.push_back(StrCat("/job:localhost/replica:0/task:0/device:", type, ":", i));
  }
  return devices;
}

// A session over `devices` devices of `type` (TEST_ARENA ones beside CPU:0) holding `root`'s
// graph; null (with a test failure) when the graph or the session cannot be made.
inline std::unique_ptr<Session> MakeSession(const Scope& root, int devices,
                                            const std::string& type = "CPU") {
  auto graph = root.ToGraphDef();
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return nullptr;
  SessionOptions options = weft::testing::SessionOptionsFor(type, devices);
  options.config.set_operation_timeout_in_ms(20'000);
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return nullptr;
  Status created = (*session)->Create(*graph);
  EXPECT_TRUE(created.ok()) << created;
  if (!created.ok()) return nullptr;
  return std::move(session).value();
}

// Fetches the tensors `outputs` (and runs `targets` first in the same step).
inline std::vector<Tensor> Fetch(Session& session, const std::vector<Output>& outputs,
                                 const std::vector<Output>& targets = {}) {
  std::vector<std::string> fetches, target_names;
  for (const Output& output : outputs) fetches.push_back(output.name());
  for (const Output& target : targets) target_names.push_back(target.node()->name());
  std::vector<Tensor> results;
  Status s = session.Run({}, fetches, target_names, &results);
  EXPECT_TRUE(s.ok()) << s;
  return results;
}

// Runs `targets` (ops without outputs, such as initializers and assignments) in one step.
inline void RunTargets(Session& session, const std::vector<Output>& targets) {
  std::vector<std::string> names;
  for (const Output& target : targets) names.push_back(target.node()->name());
  std::vector<Tensor> results;
  Status s = session.Run({}, {}, names, &results);
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace weft::distribute::testing
