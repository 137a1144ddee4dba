// OpDef: the one declaration of an op — its inputs, outputs, attrs with type constraints, shape
// function and a doc line — written with OpDefBuilder in the op's family file under ops/:
//
//   OpDefBuilder("MatMul")
//       .Input("a: T").Input("b: T").Output("product: T")
//       .Attr("transpose_a: bool = false").Attr("T: {float32, float64}")
//       .SetShapeFn(MatMulShape).Doc("Matrix product of a and b.")
//
// HostMemory("shape") marks an arg that stays in host memory on every device (shape arguments read
// by the kernel on the CPU); resource handles are always in host memory.
//
// Immutable once registered; safe to read from any thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/attr_value.pb.h"
#include "weft/core/dtype.h"
#include "weft/core/statusor.h"

namespace weft {

class InferenceContext;
using ShapeFn = std::function<Status(InferenceContext& context)>;

// One input or output. Its type is fixed (`type`), taken from a type attr (`type_attr`), and it
// may be a list of `number_attr` tensors of that type ("values: N * T").
struct ArgDef {
  std::string name;
  DataType type = DataType::kInvalid;
  std::string type_attr;
  std::string number_attr;
  // A list of tensors whose dtypes are this list(type) attr, one tensor per entry
  // ("tensors: dtypes"); set instead of type / type_attr / number_attr.
  std::string type_list_attr;
  bool host_memory = false;  // in host memory even on a device with memory of its own
};

struct AttrDef {
  std::string name;
  // "int", "float", "bool", "string", "type", "shape", "tensor",
  // "list(int)", "list(float)", "list(type)", "list(shape)".
  std::string kind;
  std::optional<proto::AttrValue> default_value;
  std::vector<DataType> allowed_types;       // for "type" and "list(type)"; empty = any
  std::vector<std::string> allowed_strings;  // for "string"; empty = any
  std::optional<int64_t> minimum;            // for "int"
};

struct OpDef {
  std::string name;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  std::vector<AttrDef> attrs;
  ShapeFn shape_fn;
  std::string doc;
  bool is_stateful = false;  // has side effects or reads state: never pruned away as a duplicate
  // Made only by Weft itself (the pruner, the partitioner, gradient functions), never by user code:
  // needs no public builder, and no gradient of its own.
  bool is_internal = false;

  const AttrDef* FindAttr(std::string_view attr_name) const;
};

// Builds an OpDef from compact spec strings. Spec errors are collected and reported by Build(),
// naming the op and the offending spec.
class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string op_name);

  // "name: float32" | "name: T" | "name: N * T"
  OpDefBuilder& Input(std::string_view spec);
  OpDefBuilder& Output(std::string_view spec);
  // "name: int" | "name: int >= 1" | "name: bool = false" | "T: {float32, float64}" |
  // "T: type" | "padding: {'SAME', 'VALID'}" | "axis: list(int) = []" | "value: tensor" | ...
  OpDefBuilder& Attr(std::string_view spec);
  // Marks the input or output `arg_name` as living in host memory (see ArgDef::host_memory).
  OpDefBuilder& HostMemory(std::string_view arg_name);
  OpDefBuilder& SetShapeFn(ShapeFn fn);
  OpDefBuilder& SetIsStateful();
  OpDefBuilder& SetIsInternal();
  OpDefBuilder& Doc(std::string_view doc);

  StatusOr<OpDef> Build() const;

 private:
  StatusOr<ArgDef> ParseArg(std::string_view spec) const;

  OpDef op_;
  std::vector<std::string> input_specs_;
  std::vector<std::string> output_specs_;
  std::vector<std::string> attr_specs_;
  std::vector<std::string> host_memory_args_;
};

// Parses one attr spec; exposed for tests.
StatusOr<AttrDef> ParseAttrSpec(std::string_view spec);

}  // namespace weft
