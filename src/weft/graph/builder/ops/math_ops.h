// Typed builders for the math ops (see ops/math_ops.cc for their semantics). Binary ops
// broadcast like NumPy. Each returns the op's output; after an error in the scope it returns an
// empty Output and the scope keeps the error.
#pragma once

#include <utility>
#include <vector>

#include "weft/graph/builder/node_builder.h"

namespace weft::ops {

Output Add(const Scope& scope, const Input& x, const Input& y);
Output Sub(const Scope& scope, const Input& x, const Input& y);
Output Mul(const Scope& scope, const Input& x, const Input& y);
Output Div(const Scope& scope, const Input& x, const Input& y);
Output Maximum(const Scope& scope, const Input& x, const Input& y);
Output Minimum(const Scope& scope, const Input& x, const Input& y);
// Comparisons: bool outputs, no gradient.
Output Equal(const Scope& scope, const Input& x, const Input& y);
Output Less(const Scope& scope, const Input& x, const Input& y);
Output LessEqual(const Scope& scope, const Input& x, const Input& y);
Output Greater(const Scope& scope, const Input& x, const Input& y);
Output GreaterEqual(const Scope& scope, const Input& x, const Input& y);
// `t` where `condition` (bool) is true, else `e`; the three broadcast together.
Output SelectV2(const Scope& scope, const Input& condition, const Input& t, const Input& e);

Output Neg(const Scope& scope, const Input& x);
Output Square(const Scope& scope, const Input& x);
Output Sqrt(const Scope& scope, const Input& x);
Output Exp(const Scope& scope, const Input& x);
Output Log(const Scope& scope, const Input& x);
Output Reciprocal(const Scope& scope, const Input& x);
Output Abs(const Scope& scope, const Input& x);
Output Sign(const Scope& scope, const Input& x);
Output Rsqrt(const Scope& scope, const Input& x);
Output Log1p(const Scope& scope, const Input& x);
// The Gauss error function, elementwise.
Output Erf(const Scope& scope, const Input& x);

Output AddN(const Scope& scope, const std::vector<Output>& inputs);

struct MatMulAttrs {
  bool transpose_a = false;
  bool transpose_b = false;
};
Output MatMul(const Scope& scope, const Input& a, const Input& b, const MatMulAttrs& attrs = {});

struct BatchMatMulAttrs {
  bool adj_x = false;
  bool adj_y = false;
};
// BatchMatMulV2: the product of each matrix (last two dims) of x and y; the batch dims broadcast.
Output BatchMatMul(const Scope& scope, const Input& x, const Input& y,
                   const BatchMatMulAttrs& attrs = {});

struct ReductionAttrs {
  bool keep_dims = false;
};
// Reduce over `axis` (a scalar or a vector of dims; negative dims count from the end).
Output Sum(const Scope& scope, const Input& input, const Input& axis,
           const ReductionAttrs& attrs = {});
Output Mean(const Scope& scope, const Input& input, const Input& axis,
            const ReductionAttrs& attrs = {});
Output Max(const Scope& scope, const Input& input, const Input& axis,
           const ReductionAttrs& attrs = {});
Output ArgMax(const Scope& scope, const Input& input, const Input& dimension,
              DataType output_type = DataType::kInt64);

Output Cast(const Scope& scope, const Input& x, DataType dtype);

// The axes to sum the gradients of a broadcasting binary op over: {r0 for x, r1 for y}.
std::pair<Output, Output> BroadcastGradientArgs(const Scope& scope, const Input& s0,
                                                const Input& s1);

}  // namespace weft::ops
