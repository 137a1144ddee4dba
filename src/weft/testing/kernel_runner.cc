#include "weft/testing/kernel_runner.h"

#include "weft/framework/node_def_util.h"
#include "weft/framework/shape_inference.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"

namespace weft::testing {
namespace {

// Fills unset type and list-length attrs from the inputs, walking the op's input args in order.
void InferAttrsFromInputs(const OpDef& op, const std::vector<Tensor>& inputs,
                          proto::NodeDef* node) {
  auto& attrs = *node->mutable_attr();
  size_t next = 0;
  for (const ArgDef& arg : op.inputs) {
    size_t count = 1;
    if (!arg.type_list_attr.empty()) {
      // A dtype list takes every remaining input but one per later arg.
      const size_t later = op.inputs.size() - 1 - (&arg - op.inputs.data());
      count = inputs.size() - next - later;
      if (!attrs.contains(arg.type_list_attr)) {
        std::vector<DataType> dtypes;
        for (size_t j = next; j < next + count; ++j) dtypes.push_back(inputs[j].dtype());
        attrs[arg.type_list_attr] = MakeAttrValue(dtypes);
      }
      next += count;
      continue;
    }
    if (!arg.number_attr.empty()) {
      if (!attrs.contains(arg.number_attr)) {
        // A list arg takes every remaining input but one per later arg.
        size_t later = op.inputs.size() - 1 - (&arg - op.inputs.data());
        count = inputs.size() - next - later;
        attrs[arg.number_attr] = MakeAttrValue(static_cast<int64_t>(count));
      } else {
        count = static_cast<size_t>(attrs[arg.number_attr].i());
      }
    }
    if (!arg.type_attr.empty() && !attrs.contains(arg.type_attr) && next < inputs.size()) {
      attrs[arg.type_attr] = MakeAttrValue(inputs[next].dtype());
    }
    next += count;
  }
}

}  // namespace

KernelRunner::KernelRunner(int intra_op_threads)
    : device_(std::make_unique<CpuDevice>("/job:localhost/replica:0/task:0/device:CPU:0",
                                          intra_op_threads)) {}

Status KernelRunner::Prepare(const std::string& op_name, const std::vector<Tensor>& inputs,
                             std::map<std::string, proto::AttrValue> attrs,
                             const std::string& node_name, proto::NodeDef* node, const OpDef** op) {
  WEFT_ASSIGN_OR_RETURN(*op, ops::AllOps().LookUp(op_name));
  node->set_name(node_name.empty() ? "test_" + op_name : node_name);
  node->set_op(op_name);
  for (auto& [name, value] : attrs) (*node->mutable_attr())[name] = value;
  for (size_t i = 0; i < inputs.size(); ++i) node->add_input(StrCat("input", i));
  InferAttrsFromInputs(**op, inputs, node);
  AddDefaultsToNodeDef(**op, node);
  WEFT_RETURN_IF_ERROR(ValidateNodeDef(*node, **op));
  std::vector<DataType> input_types, output_types;
  WEFT_RETURN_IF_ERROR(InOutTypesForNode(*node, **op, &input_types, &output_types));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() != input_types[i]) {
      return InvalidArgument(FormatNodeForError(*node), ": input ", i, " is ",
                             DataTypeName(inputs[i].dtype()), ", expected ",
                             DataTypeName(input_types[i]));
    }
  }
  return Status::OK();
}

StatusOr<std::vector<Tensor>> KernelRunner::Execute(OpKernel& kernel, std::vector<Tensor>& inputs) {
  OpKernelContext::Params params;
  params.kernel = &kernel;
  params.device = device_.get();
  params.inputs = &inputs;
  OpKernelContext context(params);
  WEFT_RETURN_IF_ERROR(kernel.Compute(&context));
  WEFT_RETURN_IF_ERROR(context.status());
  std::vector<Tensor> outputs = std::move(context.outputs());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].IsInitialized()) {
      return Internal(FormatNodeForError(kernel.def()), ": kernel left output ", i, " unset");
    }
  }
  return outputs;
}

StatusOr<std::vector<Tensor>> KernelRunner::Run(const std::string& op_name,
                                                std::vector<Tensor> inputs,
                                                std::map<std::string, proto::AttrValue> attrs) {
  proto::NodeDef node;
  const OpDef* op = nullptr;
  WEFT_RETURN_IF_ERROR(Prepare(op_name, inputs, std::move(attrs), "", &node, &op));
  std::vector<PartialShape> input_shapes;
  std::vector<const Tensor*> input_values;
  for (const Tensor& t : inputs) {
    input_shapes.emplace_back(t.shape());
    input_values.push_back(&t);
  }
  std::vector<DataType> input_types, output_types;
  WEFT_RETURN_IF_ERROR(InOutTypesForNode(node, *op, &input_types, &output_types));
  InferenceContext inference(node, *op, input_shapes, input_values,
                             static_cast<int>(output_types.size()));
  if (op->shape_fn) WEFT_RETURN_IF_ERROR(op->shape_fn(inference));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel,
                        kernels::AllKernels().CreateKernel(node, *op, device_.get()));
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, Execute(*kernel, inputs));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!inference.output(i).IsCompatibleWith(outputs[i].shape())) {
      return Internal(FormatNodeForError(node), ": output ", i, " has shape ", outputs[i].shape(),
                      ", but shape inference said ", inference.output(i).DebugString());
    }
  }
  return outputs;
}

StatusOr<std::vector<Tensor>> KernelRunner::RunKernelOnly(
    const std::string& op_name, std::vector<Tensor> inputs,
    std::map<std::string, proto::AttrValue> attrs, const std::string& node_name) {
  proto::NodeDef node;
  const OpDef* op = nullptr;
  WEFT_RETURN_IF_ERROR(Prepare(op_name, inputs, std::move(attrs), node_name, &node, &op));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel,
                        kernels::AllKernels().CreateKernel(node, *op, device_.get()));
  return Execute(*kernel, inputs);
}

StatusOr<Tensor> KernelRunner::RunOne(const std::string& op, std::vector<Tensor> inputs,
                                      std::map<std::string, proto::AttrValue> attrs) {
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, Run(op, std::move(inputs), std::move(attrs)));
  if (outputs.size() != 1) return Internal(op, " has ", outputs.size(), " outputs, expected 1");
  return outputs[0];
}

StatusOr<std::vector<PartialShape>> InferShapes(
    const std::string& op_name, std::vector<PartialShape> shapes, std::vector<const Tensor*> values,
    const std::map<std::string, proto::AttrValue>& attrs, const std::string& node_name) {
  WEFT_ASSIGN_OR_RETURN(const OpDef* op, ops::AllOps().LookUp(op_name));
  proto::NodeDef node;
  node.set_name(node_name.empty() ? "test_" + op_name : node_name);
  node.set_op(op_name);
  for (const auto& [name, value] : attrs) (*node.mutable_attr())[name] = value;
  AddDefaultsToNodeDef(*op, &node);
  InferenceContext context(node, *op, std::move(shapes), std::move(values),
                           static_cast<int>(op->outputs.size()));
  if (op->shape_fn) WEFT_RETURN_IF_ERROR(op->shape_fn(context));
  return context.outputs();
}

}  // namespace weft::testing
