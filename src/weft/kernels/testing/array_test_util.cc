// Test helpers for the array kernels (see array_test_util.h).
#include "weft/kernels/testing/array_test_util.h"

#include <cstring>
#include <type_traits>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"

namespace weft::kernels::array::testing {

std::vector<DataType> AllTypes() {
  return {DataType::kFloat, DataType::kDouble, DataType::kInt32,   DataType::kInt64,
          DataType::kUInt8, DataType::kBool,   DataType::kBFloat16};
}

Tensor RandomTensor(DataType dtype, const TensorShape& shape, std::mt19937& rng) {
  Tensor t(dtype, shape);
  VisitNumericType(dtype, [&]<typename T>() {
    T* data = t.data<T>();
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        data[i] = (rng() & 1) != 0;
      } else if constexpr (std::is_floating_point_v<T>) {
        data[i] = std::uniform_real_distribution<T>(-10, 10)(rng);
      } else {
        data[i] = static_cast<T>(rng());
      }
    }
  });
  return t;
}

Tensor IndexVector(DataType dtype, const std::vector<int64_t>& values) {
  if (dtype == DataType::kInt64) return Tensor::FromVector(values);
  std::vector<int32_t> narrow(values.begin(), values.end());
  return Tensor::FromVector(narrow);
}

Tensor IndexScalar(DataType dtype, int64_t value) {
  return IndexVector(dtype, {value}).Reshaped(TensorShape());
}

std::vector<int64_t> Unravel(int64_t flat, const TensorShape& shape) {
  std::vector<int64_t> index(shape.dims());
  for (int i = shape.dims() - 1; i >= 0; --i) {
    index[i] = flat % shape.dim_size(i);
    flat /= shape.dim_size(i);
  }
  return index;
}

int64_t Ravel(const std::vector<int64_t>& index, const TensorShape& shape) {
  int64_t flat = 0;
  for (int i = 0; i < shape.dims(); ++i) flat = flat * shape.dim_size(i) + index[i];
  return flat;
}

void CopyElement(const Tensor& src, int64_t from, Tensor& dst, int64_t to) {
  const size_t size = DataTypeSize(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw_data()) + to * size,
              static_cast<const char*>(src.raw_data()) + from * size, size);
}

::testing::AssertionResult IsNodeError(const Status& status, std::string_view node,
                                       std::string_view fragment) {
  if (!IsInvalidArgument(status)) {
    return ::testing::AssertionFailure() << "expected INVALID_ARGUMENT, got " << status;
  }
  const std::string prefix = StrCat("node '", node, "' (");
  if (!status.message().starts_with(prefix)) {
    return ::testing::AssertionFailure()
           << "message does not start with " << prefix << ": " << status;
  }
  if (status.message().find(fragment) == std::string::npos) {
    return ::testing::AssertionFailure() << "message lacks '" << fragment << "': " << status;
  }
  return ::testing::AssertionSuccess();
}

StatusOr<std::unique_ptr<DirectKernel>> DirectKernel::Create(
    DeviceBase* device, const std::string& op_name, const std::vector<DataType>& input_types,
    std::map<std::string, proto::AttrValue> attrs) {
  WEFT_ASSIGN_OR_RETURN(const OpDef* op, ops::AllOps().LookUp(op_name));
  proto::NodeDef node;
  node.set_name("test_" + op_name);
  node.set_op(op_name);
  for (auto& [name, value] : attrs) (*node.mutable_attr())[name] = value;
  for (size_t i = 0; i < input_types.size(); ++i) node.add_input(StrCat("input", i));
  auto& node_attrs = *node.mutable_attr();
  size_t next = 0;
  for (size_t a = 0; a < op->inputs.size(); ++a) {
    const ArgDef& arg = op->inputs[a];
    size_t count = 1;
    if (!arg.number_attr.empty()) {
      if (!node_attrs.contains(arg.number_attr)) {
        count = input_types.size() - next - (op->inputs.size() - 1 - a);
        node_attrs[arg.number_attr] = MakeAttrValue(static_cast<int64_t>(count));
      } else {
        count = static_cast<size_t>(node_attrs[arg.number_attr].i());
      }
    }
    if (!arg.type_attr.empty() && !node_attrs.contains(arg.type_attr) &&
        next < input_types.size()) {
      node_attrs[arg.type_attr] = MakeAttrValue(input_types[next]);
    }
    next += count;
  }
  AddDefaultsToNodeDef(*op, &node);
  WEFT_RETURN_IF_ERROR(ValidateNodeDef(node, *op));
  std::unique_ptr<DirectKernel> direct(new DirectKernel(device));
  WEFT_ASSIGN_OR_RETURN(direct->kernel_, kernels::AllKernels().CreateKernel(node, *op, device));
  return direct;
}

StatusOr<std::vector<Tensor>> DirectKernel::Compute(std::vector<Tensor> inputs) {
  OpKernelContext::Params params;
  params.kernel = kernel_.get();
  params.device = device_;
  params.inputs = &inputs;
  OpKernelContext context(params);
  WEFT_RETURN_IF_ERROR(kernel_->Compute(&context));
  WEFT_RETURN_IF_ERROR(context.status());
  return std::move(context.outputs());
}

StatusOr<Tensor> RunKernelOnly(DeviceBase* device, const std::string& op,
                               std::vector<Tensor> inputs,
                               std::map<std::string, proto::AttrValue> attrs) {
  std::vector<DataType> types;
  for (const Tensor& t : inputs) types.push_back(t.dtype());
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<DirectKernel> kernel,
                        DirectKernel::Create(device, op, types, std::move(attrs)));
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, kernel->Compute(std::move(inputs)));
  if (outputs.empty()) return Internal(op, " has no outputs");
  return outputs[0];
}

}  // namespace weft::kernels::array::testing
