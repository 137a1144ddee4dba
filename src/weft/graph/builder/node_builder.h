// Input and NodeBuilder: the generic machinery under the typed op functions of ops::.
// An Input is an Output of the graph or a C++ constant (2.0f, {1, 2, 3}, a Tensor) that becomes a
// Const node; a numeric literal takes the dtype the op needs from its other inputs, so
// ops::Mul(s, x, 0.5) works for float32 and float64 x alike. NodeBuilder fills type attrs ("T")
// and list lengths ("N") from the inputs, applies the scope's name, device and control
// dependencies, and records any error in the scope. Not thread-safe (like Scope).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/core/tensor.h"
#include "weft/framework/attr_value_util.h"
#include "weft/graph/builder/scope.h"

namespace weft {

class Input {
 public:
  Input(const Output& output) : output_(output) {}  // NOLINT: implicit by design
  Input(Node* node) : output_(Output(node, 0)) {}   // NOLINT
  Input(const Tensor& value) : value_(value) {}     // NOLINT
  Input(float value) : value_(Tensor::Scalar(value)), is_literal_(true) {}             // NOLINT
  Input(double value) : value_(Tensor::Scalar(value)), is_literal_(true) {}            // NOLINT
  Input(int value) : value_(Tensor::Scalar<int32_t>(value)), is_literal_(true) {}      // NOLINT
  Input(int64_t value) : value_(Tensor::Scalar<int64_t>(value)), is_literal_(true) {}  // NOLINT
  Input(bool value) : value_(Tensor::Scalar(value)) {}                                 // NOLINT
  Input(std::initializer_list<float> values)                                           // NOLINT
      : value_(Tensor::FromVector(std::vector<float>(values))), is_literal_(true) {}
  Input(std::initializer_list<double> values)  // NOLINT
      : value_(Tensor::FromVector(std::vector<double>(values))), is_literal_(true) {}
  Input(std::initializer_list<int> values)  // NOLINT
      : value_(Tensor::FromVector(std::vector<int32_t>(values.begin(), values.end()))),
        is_literal_(true) {}
  Input(std::initializer_list<int64_t> values)  // NOLINT
      : value_(Tensor::FromVector(std::vector<int64_t>(values))), is_literal_(true) {}

  bool is_constant() const { return value_.has_value(); }
  const Output& output() const { return output_; }
  const Tensor& value() const { return *value_; }
  // A C++ literal may be converted to the dtype the op needs; an explicit Tensor may not.
  bool is_literal() const { return is_literal_; }

 private:
  Output output_;
  std::optional<Tensor> value_;
  bool is_literal_ = false;
};

class NodeBuilder {
 public:
  NodeBuilder(const Scope& scope, std::string_view op_type);

  NodeBuilder& Input(const weft::Input& input);
  // A list input ("values: N * T"); sets N from its length.
  NodeBuilder& InputList(const std::vector<Output>& inputs);
  template <typename T>
  NodeBuilder& Attr(std::string_view name, const T& value) {
    (*def_.mutable_attr())[std::string(name)] = MakeAttrValue(value);
    return *this;
  }
  NodeBuilder& Attr(std::string_view name, const proto::AttrValue& value) {
    (*def_.mutable_attr())[std::string(name)] = value;
    return *this;
  }

  // Adds the node; nullptr (with the error recorded in the scope) on failure, or when the scope
  // already holds an error.
  Node* Finalize();

 private:
  Status Build(Node** node);
  // Build's steps. Fills the list lengths and type attrs the inputs decide (a graph output decides
  // a type over a literal) and that the caller did not set.
  Status InferAttrsFromInputs(const OpDef& op);
  // The node's inputs: graph outputs as they are, constants as new Const nodes, literals converted
  // to the dtype their arg needs.
  Status MaterializeInputs(const OpDef& op, std::vector<NodeOutput>* inputs);

  Scope scope_;
  proto::NodeDef def_;
  // One group per input arg of the op, in order: a single input, or the elements of a list.
  std::vector<std::vector<weft::Input>> groups_;
  std::vector<bool> group_is_list_;
};

}  // namespace weft
