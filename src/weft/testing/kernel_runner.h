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
#include "weft/framework/op_kernel.h"
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

  // Runs the kernel without the op's shape function first, to reach the checks a kernel makes
  // itself (in a graph whose shapes are unknown they are the only ones). The node is named
  // `node_name`, by default "test_<op>".
  StatusOr<std::vector<Tensor>> RunKernelOnly(const std::string& op, std::vector<Tensor> inputs,
                                              std::map<std::string, proto::AttrValue> attrs = {},
                                              const std::string& node_name = "");

  DeviceBase* device() { return device_.get(); }

 private:
  // Builds and validates the node, filling type attrs from the inputs.
  Status Prepare(const std::string& op_name, const std::vector<Tensor>& inputs,
                 std::map<std::string, proto::AttrValue> attrs, const std::string& node_name,
                 proto::NodeDef* node, const OpDef** op);
  // Runs Compute and returns the outputs, each checked to be set.
  StatusOr<std::vector<Tensor>> Execute(OpKernel& kernel, std::vector<Tensor>& inputs);

  std::unique_ptr<CpuDevice> device_;
};

// Runs `op`'s shape function on partly known input shapes; `values[i]` is the constant value of
// input i or nullptr (it may be shorter than `shapes`). Attrs get their defaults. The node is named
// `node_name`, by default "test_<op>".
StatusOr<std::vector<PartialShape>> InferShapes(
    const std::string& op, std::vector<PartialShape> shapes, std::vector<const Tensor*> values,
    const std::map<std::string, proto::AttrValue>& attrs, const std::string& node_name = "");

}  // namespace weft::testing
