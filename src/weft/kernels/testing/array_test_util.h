// Helpers for the array kernel tests: random tensors of every array dtype, int32/int64 index
// tensors, element-wise index arithmetic for reference loops, a check that a status is an
// InvalidArgument naming the node, and DirectKernel, which builds one kernel without running
// shape inference. DirectKernel reaches the kernels' own checks (which a constant input would let
// the shape function catch first, as KernelRunner always passes inputs as constants) and runs one
// kernel several times.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/tensor.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/device_base.h"
#include "weft/framework/op_kernel.h"

namespace weft::kernels::array::testing {

// float32, float64, int32, int64, uint8, bool, bfloat16.
std::vector<DataType> AllTypes();

// Random elements: floats in [-10, 10), integers over most of their range, random bools.
Tensor RandomTensor(DataType dtype, const TensorShape& shape, std::mt19937& rng);

// An int32 or int64 vector holding `values`, and a scalar holding `value`.
Tensor IndexVector(DataType dtype, const std::vector<int64_t>& values);
Tensor IndexScalar(DataType dtype, int64_t value);

// Row-major position of element `flat` in `shape`, and back.
std::vector<int64_t> Unravel(int64_t flat, const TensorShape& shape);
int64_t Ravel(const std::vector<int64_t>& index, const TensorShape& shape);
// dst[to] = src[from] for tensors of the same dtype.
void CopyElement(const Tensor& src, int64_t from, Tensor& dst, int64_t to);

// Success when `status` is an InvalidArgument whose message starts with "node '<node>' (" and
// contains `fragment`.
::testing::AssertionResult IsNodeError(const Status& status, std::string_view node,
                                       std::string_view fragment);

class DirectKernel {
 public:
  // Builds the kernel for `op` (node name "test_<op>") taking inputs of `input_types`; type and
  // list-length attrs the inputs imply are filled in when not given, as KernelRunner does.
  static StatusOr<std::unique_ptr<DirectKernel>> Create(
      DeviceBase* device, const std::string& op, const std::vector<DataType>& input_types,
      std::map<std::string, proto::AttrValue> attrs = {});

  // Runs Compute once on `inputs` (no shape inference) and returns the outputs.
  StatusOr<std::vector<Tensor>> Compute(std::vector<Tensor> inputs);
  const OpKernel& kernel() const { return *kernel_; }

 private:
  explicit DirectKernel(DeviceBase* device) : device_(device) {}

  DeviceBase* device_;
  std::unique_ptr<OpKernel> kernel_;
};

// Creates a DirectKernel for `inputs` and returns its output 0.
StatusOr<Tensor> RunKernelOnly(DeviceBase* device, const std::string& op,
                               std::vector<Tensor> inputs,
                               std::map<std::string, proto::AttrValue> attrs = {});

}  // namespace weft::kernels::array::testing
