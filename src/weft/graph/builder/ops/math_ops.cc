#include "weft/graph/builder/ops/math_ops.h"

#include "weft/graph/builder/ops/op_helpers.h"

namespace weft::ops {
namespace {

Output Binary(const Scope& scope, const char* op, const Input& x, const Input& y) {
  return FirstOutput(NodeBuilder(scope, op).Input(x).Input(y));
}

Output Unary(const Scope& scope, const char* op, const Input& x) {
  return FirstOutput(NodeBuilder(scope, op).Input(x));
}

Output Reduction(const Scope& scope, const char* op, const Input& input, const Input& axis,
                 const ReductionAttrs& attrs) {
  return FirstOutput(
      NodeBuilder(scope, op).Input(input).Input(axis).Attr("keep_dims", attrs.keep_dims));
}

}  // namespace

Output Add(const Scope& scope, const Input& x, const Input& y) {
  return Binary(scope, "Add", x, y);
}
Output Sub(const Scope& scope, const Input& x, const Input& y) {
  return Binary(scope, "Sub", x, y);
}
Output Mul(const Scope& scope, const Input& x, const Input& y) {
  return Binary(scope, "Mul", x, y);
}
Output Div(const Scope& scope, const Input& x, const Input& y) {
  return Binary(scope, "Div", x, y);
}
Output Maximum(const Scope& scope, const Input& x, const Input& y) {
  return Binary(scope, "Maximum", x, y);
}
Output Minimum(const Scope& scope, const Input& x, const Input& y) {
  return Binary(scope, "Minimum", x, y);
}
Output Equal(const Scope& scope, const Input& x, const Input& y) {
  return Binary(scope, "Equal", x, y);
}
Output Less(const Scope& scope, const Input& x, const Input& y) {
  return Binary(scope, "Less", x, y);
}
Output LessEqual(const Scope& scope, const Input& x, const Input& y) {
  return Binary(scope, "LessEqual", x, y);
}
Output Greater(const Scope& scope, const Input& x, const Input& y) {
  return Binary(scope, "Greater", x, y);
}
Output GreaterEqual(const Scope& scope, const Input& x, const Input& y) {
  return Binary(scope, "GreaterEqual", x, y);
}
Output SelectV2(const Scope& scope, const Input& condition, const Input& t, const Input& e) {
  return FirstOutput(NodeBuilder(scope, "SelectV2").Input(condition).Input(t).Input(e));
}

Output Neg(const Scope& scope, const Input& x) { return Unary(scope, "Neg", x); }
Output Square(const Scope& scope, const Input& x) { return Unary(scope, "Square", x); }
Output Sqrt(const Scope& scope, const Input& x) { return Unary(scope, "Sqrt", x); }
Output Exp(const Scope& scope, const Input& x) { return Unary(scope, "Exp", x); }
Output Log(const Scope& scope, const Input& x) { return Unary(scope, "Log", x); }
Output Reciprocal(const Scope& scope, const Input& x) { return Unary(scope, "Reciprocal", x); }
Output Abs(const Scope& scope, const Input& x) { return Unary(scope, "Abs", x); }
Output Sign(const Scope& scope, const Input& x) { return Unary(scope, "Sign", x); }
Output Rsqrt(const Scope& scope, const Input& x) { return Unary(scope, "Rsqrt", x); }
Output Log1p(const Scope& scope, const Input& x) { return Unary(scope, "Log1p", x); }
Output Erf(const Scope& scope, const Input& x) { return Unary(scope, "Erf", x); }

Output AddN(const Scope& scope, const std::vector<Output>& inputs) {
  return FirstOutput(NodeBuilder(scope, "AddN").InputList(inputs));
}

Output MatMul(const Scope& scope, const Input& a, const Input& b, const MatMulAttrs& attrs) {
  return FirstOutput(NodeBuilder(scope, "MatMul")
                         .Input(a)
                         .Input(b)
                         .Attr("transpose_a", attrs.transpose_a)
                         .Attr("transpose_b", attrs.transpose_b));
}

Output BatchMatMul(const Scope& scope, const Input& x, const Input& y,
                   const BatchMatMulAttrs& attrs) {
  return FirstOutput(NodeBuilder(scope, "BatchMatMulV2")
                         .Input(x)
                         .Input(y)
                         .Attr("adj_x", attrs.adj_x)
                         .Attr("adj_y", attrs.adj_y));
}

Output Sum(const Scope& scope, const Input& input, const Input& axis, const ReductionAttrs& attrs) {
  return Reduction(scope, "Sum", input, axis, attrs);
}
Output Mean(const Scope& scope, const Input& input, const Input& axis,
            const ReductionAttrs& attrs) {
  return Reduction(scope, "Mean", input, axis, attrs);
}
Output Max(const Scope& scope, const Input& input, const Input& axis, const ReductionAttrs& attrs) {
  return Reduction(scope, "Max", input, axis, attrs);
}

Output ArgMax(const Scope& scope, const Input& input, const Input& dimension,
              DataType output_type) {
  return FirstOutput(
      NodeBuilder(scope, "ArgMax").Input(input).Input(dimension).Attr("output_type", output_type));
}

Output Cast(const Scope& scope, const Input& x, DataType dtype) {
  return FirstOutput(NodeBuilder(scope, "Cast").Input(x).Attr("DstT", dtype));
}

std::pair<Output, Output> BroadcastGradientArgs(const Scope& scope, const Input& s0,
                                                const Input& s1) {
  NodeBuilder builder(scope, "BroadcastGradientArgs");
  return TwoOutputs(builder.Input(s0).Input(s1));
}

}  // namespace weft::ops
