#include "weft/graph/builder/ops/random_ops.h"

#include "weft/graph/builder/ops/op_helpers.h"

namespace weft::ops {
namespace {

Output RandomOp(const Scope& scope, std::string_view op_type, const Input& shape, DataType dtype,
                const RandomAttrs& attrs) {
  return FirstOutput(NodeBuilder(scope, op_type)
                         .Input(shape)
                         .Attr("dtype", dtype)
                         .Attr("seed", attrs.seed)
                         .Attr("seed2", attrs.seed2));
}

}  // namespace

Output RandomUniform(const Scope& scope, const Input& shape, DataType dtype,
                     const RandomAttrs& attrs) {
  return RandomOp(scope, "RandomUniform", shape, dtype, attrs);
}

Output RandomStandardNormal(const Scope& scope, const Input& shape, DataType dtype,
                            const RandomAttrs& attrs) {
  return RandomOp(scope, "RandomStandardNormal", shape, dtype, attrs);
}

Output TruncatedNormal(const Scope& scope, const Input& shape, DataType dtype,
                       const RandomAttrs& attrs) {
  return RandomOp(scope, "TruncatedNormal", shape, dtype, attrs);
}

}  // namespace weft::ops
