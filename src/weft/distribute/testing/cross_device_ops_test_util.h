// Test helpers for the CrossDeviceOps tests: per-replica constants on CPU devices, their plain
// sum or mean, op counting, and a run-and-compare check of Reduce.
#pragma once

#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "weft/distribute/cross_device_ops.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::distribute::testing {

// Replica r's value: a constant of `shape` holding r * 10 + element index (+ offset).
inline Output ReplicaValue(const Scope& root, int r, const TensorShape& shape, float offset = 0) {
  std::vector<float> values(shape.num_elements());
  for (size_t k = 0; k < values.size(); ++k) values[k] = r * 10.0f + k + offset;
  return ops::Const(root.WithDevice(CpuDevice(r)), Tensor::FromVector(values, shape));
}

inline PerReplica MakePerReplica(const Scope& root, int n, const TensorShape& shape,
                                 float offset = 0) {
  std::vector<Output> values;
  for (int r = 0; r < n; ++r) values.push_back(ReplicaValue(root, r, shape, offset));
  return PerReplica(values, CpuDevices(n));
}

// The plain sum (or mean) of MakePerReplica's components.
inline Tensor Expected(int n, const TensorShape& shape, ReduceOp op, float offset = 0) {
  std::vector<float> values(shape.num_elements(), 0.0f);
  for (int r = 0; r < n; ++r) {
    for (size_t k = 0; k < values.size(); ++k) values[k] += r * 10.0f + k + offset;
  }
  if (op == ReduceOp::kMean) {
    for (float& v : values) v /= n;
  }
  return Tensor::FromVector(values, shape);
}

inline int CountOps(const Scope& root, std::string_view type) {
  int count = 0;
  for (int id = 0; id < root.graph()->num_node_ids(); ++id) {
    Node* node = root.graph()->node(id);
    if (node != nullptr && node->type_string() == type) ++count;
  }
  return count;
}

inline void CheckReduce(CrossDeviceOps& cross_device_ops, int n, ReduceOp op) {
  Scope root = Scope::NewRootScope();
  const TensorShape shape({2, 3});
  PerReplica value = MakePerReplica(root, n, shape);
  auto reduced = cross_device_ops.Reduce(root, op, value, CpuDevices(n));
  ASSERT_TRUE(reduced.ok()) << reduced.status();
  ASSERT_EQ(reduced->num_replicas(), n);
  auto session = testing::MakeSession(root, n);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> results = testing::Fetch(*session, reduced->values());
  ASSERT_EQ(results.size(), static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    EXPECT_TENSOR_NEAR(results[r], Expected(n, shape, op)) << "replica " << r;
  }
}

}  // namespace weft::distribute::testing
