// Shape inference: each op's shape function reads its node's input shapes (and, where the input
// is a constant, its value) and sets its output shapes, failing with InvalidArgument when the
// inputs cannot go together (MatMul of [3,4] by [5,6]). Graph construction runs it per node, so
// such errors surface before any step runs. One InferenceContext per node; not thread-safe.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/framework/attr_value_util.h"
#include "weft/framework/op_def.h"
#include "weft/framework/partial_shape.h"

namespace weft {

class InferenceContext {
 public:
  // `input_tensors[i]` is the value of input i when known (a Const), else nullptr; it may be
  // shorter than `input_shapes`. Output shapes start unknown.
  InferenceContext(const proto::NodeDef& node, const OpDef& op,
                   std::vector<PartialShape> input_shapes, std::vector<const Tensor*> input_tensors,
                   int num_outputs);

  // For resource inputs: the declared shape of the value behind the handle (a variable's shape),
  // which ReadVariableOp reports as its output shape. Unknown when not set.
  void set_input_handle_shapes(std::vector<PartialShape> shapes) {
    input_handle_shapes_ = std::move(shapes);
  }
  PartialShape input_handle_shape(int i) const {
    return i < static_cast<int>(input_handle_shapes_.size()) ? input_handle_shapes_[i]
                                                             : PartialShape::UnknownRank();
  }

  // For 1-D int inputs that hold a shape not known as a constant: what is known of it, as the
  // reference's input_tensors_as_shapes (the output of Shape(x) is x's partial shape), so that
  // Reshape(g, Shape(x)) keeps x's known dimensions. Unknown rank when not set.
  void set_input_tensors_as_shapes(std::vector<PartialShape> shapes) {
    input_tensors_as_shapes_ = std::move(shapes);
  }
  PartialShape input_tensor_as_shape(int i) const {
    return i < static_cast<int>(input_tensors_as_shapes_.size()) ? input_tensors_as_shapes_[i]
                                                                 : PartialShape::UnknownRank();
  }

  const proto::NodeDef& node_def() const { return node_; }
  const OpDef& op_def() const { return op_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  const PartialShape& input(int i) const { return inputs_[i]; }
  const Tensor* input_tensor(int i) const {
    return i < static_cast<int>(input_tensors_.size()) ? input_tensors_[i] : nullptr;
  }
  void set_output(int i, PartialShape shape) { outputs_[i] = std::move(shape); }
  const PartialShape& output(int i) const { return outputs_[i]; }
  const std::vector<PartialShape>& outputs() const { return outputs_; }

  template <typename T>
  Status GetAttr(std::string_view name, T* value) const {
    return GetNodeAttr(node_, name, value);
  }

  // The values of input `i` when it is a constant int32/int64 tensor; nullopt otherwise.
  std::optional<std::vector<int64_t>> ConstantIntVector(int i) const;
  // Sets output `output` to the shape held by the 1-D int input `input` (Fill's dims, a random
  // op's shape): exact when the input is constant, else what input_tensor_as_shape knows, else
  // only its rank when the length is known.
  Status SetOutputFromShapeInput(int output, int input);

  // Checks that input `i` has rank `rank` (when its rank is known).
  Status WithRank(int i, int rank) const;
  Status WithRankAtLeast(int i, int rank) const;
  // Checks that two known dimensions agree; `what` describes them for the message.
  Status CheckDimsEqual(int64_t a, int64_t b, std::string_view what) const;

  // An InvalidArgument for this node: "node 'x' (Op): <message>".
  template <typename... Args>
  Status Error(Args&&... args) const {
    return InvalidArgument(NodePrefix(), std::forward<Args>(args)...);
  }

 private:
  std::string NodePrefix() const;

  const proto::NodeDef& node_;
  const OpDef& op_;
  std::vector<PartialShape> inputs_;
  std::vector<const Tensor*> input_tensors_;
  std::vector<PartialShape> input_handle_shapes_;
  std::vector<PartialShape> input_tensors_as_shapes_;
  std::vector<PartialShape> outputs_;
};

// Shape functions shared by many ops.
namespace shape_fn {
// Output 0 has the shape of input 0.
Status UnchangedShape(InferenceContext& context);
// Output 0 has the shape in the node's "shape" attr (Placeholder, _Arg).
Status ShapeFromShapeAttr(InferenceContext& context);
// Every output is a scalar.
Status ScalarShape(InferenceContext& context);
// Every output shape is unknown.
Status UnknownShape(InferenceContext& context);
// Output 0 is the NumPy broadcast of inputs 0 and 1; incompatible known dims are an error.
Status BroadcastBinaryOp(InferenceContext& context);
}  // namespace shape_fn

// NumPy broadcasting of two partial shapes; InvalidArgument when known dims conflict.
StatusOr<PartialShape> BroadcastShapes(const PartialShape& a, const PartialShape& b);

}  // namespace weft
