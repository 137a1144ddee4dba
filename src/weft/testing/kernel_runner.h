// Test helper: runs one op's CPU kernel on given inputs, the way the executor would, without
// building a graph. It validates the node against the op registry (so attr mistakes fail like in
// a graph), runs the op's shape function on the inputs and checks every output against the
// inferred shape, so kernel tests also test shape functions. Each runner owns one CpuDevice.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/framework/attr_value_util.h"
#include "weft/runtime/cpu_device.h"

namespace weft::testing {

class KernelRunner {
 public:
  explicit KernelRunner(int intra_op_threads = 2);

  // Runs `op` with `inputs` and `attrs`. Type attrs named by the op's input args (like "T") are
  // filled from the inputs' dtypes when not given, and "N" from a list arg's length.
  StatusOr<std::vector<Tensor>> Run(const std::string& op, std::vector<Tensor> inputs,
                                    std::map<std::string, proto::AttrValue> attrs = {});

  // Like Run, for an op with exactly one output.
  StatusOr<Tensor> RunOne(const std::string& op, std::vector<Tensor> inputs,
                          std::map<std::string, proto::AttrValue> attrs = {});

  DeviceBase* device() { return device_.get(); }

 private:
  std::unique_ptr<CpuDevice> device_;
};

}  // namespace weft::testing
