// Test helpers for the state kernels: make a variable handle, assign, read and update through a
// KernelRunner (one runner = one device = one ResourceMgr). Tests only.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/testing/kernel_runner.h"

namespace weft::kernels::state::testing {

// A handle to variable `name` of `dtype` (declared `shape`) on the runner's device.
inline Tensor MakeHandle(weft::testing::KernelRunner& runner, const std::string& name,
                         DataType dtype, const PartialShape& shape = PartialShape()) {
  StatusOr<Tensor> handle = runner.RunOne("VarHandleOp", {},
                                          {{"shared_name", MakeAttrValue(name)},
                                           {"dtype", MakeAttrValue(dtype)},
                                           {"shape", MakeAttrValue(shape)}});
  EXPECT_TRUE(handle.ok()) << handle.status();
  return handle.ok() ? *handle : Tensor();
}

inline Status Assign(weft::testing::KernelRunner& runner, const Tensor& handle, Tensor value) {
  return runner.Run("AssignVariableOp", {handle, std::move(value)}).status();
}

inline StatusOr<Tensor> Read(weft::testing::KernelRunner& runner, const Tensor& handle,
                             DataType dtype) {
  return runner.RunOne("ReadVariableOp", {handle}, {{"dtype", MakeAttrValue(dtype)}});
}

// A handle to a new variable holding `value`.
inline Tensor MakeVariable(weft::testing::KernelRunner& runner, const std::string& name,
                           const Tensor& value) {
  Tensor handle = MakeHandle(runner, name, value.dtype(), PartialShape(value.shape()));
  Status status = Assign(runner, handle, value.DeepCopy());
  EXPECT_TRUE(status.ok()) << status;
  return handle;
}

// Reads a variable that must be readable.
inline Tensor MustRead(weft::testing::KernelRunner& runner, const Tensor& handle, DataType dtype) {
  StatusOr<Tensor> value = Read(runner, handle, dtype);
  EXPECT_TRUE(value.ok()) << value.status();
  return value.ok() ? *value : Tensor();
}

inline bool Contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

}  // namespace weft::kernels::state::testing
