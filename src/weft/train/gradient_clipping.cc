#include "weft/train/gradient_clipping.h"

namespace weft::train {

Output GlobalNorm(const Scope& scope, const std::vector<Output>& values) {
  const Scope s = scope.NewSubScope("global_norm");
  std::vector<Output> sums;
  for (const Output& value : values) {
    // Flattened, so that one reduction over axis 0 covers a value of any rank.
    const Output squares = ops::Reshape(s, ops::Square(s, value), {-1});
    Output sum = ops::Sum(s, squares, 0);
    if (value.dtype() != DataType::kDouble) sum = ops::Cast(s, sum, DataType::kDouble);
    sums.push_back(sum);
  }
  if (sums.empty()) return ops::Const(s, 0.0);
  const Output total = sums.size() == 1 ? sums[0] : ops::AddN(s, sums);
  return ops::Sqrt(s, total);
}

Output ClipScale(const Scope& scope, const Output& global_norm, double clip_norm) {
  const Scope s = scope.NewSubScope("clip_scale");
  const Output finite_scale =
      ops::Div(s, ops::Const(s, clip_norm), ops::Maximum(s, global_norm, clip_norm));
  // norm - norm is 0 for a finite norm and NaN otherwise (Inf - Inf, NaN - NaN).
  return ops::Add(s, finite_scale, ops::Sub(s, global_norm, global_norm));
}

std::vector<Output> ScaleValues(const Scope& scope, const std::vector<Output>& values,
                                const Output& scale) {
  std::vector<Output> scaled;
  Output as_float;  // the scale in float32, made once for the usual case
  for (const Output& value : values) {
    Output factor = scale;
    if (value.dtype() == DataType::kFloat) {
      if (!as_float) as_float = ops::Cast(scope, scale, DataType::kFloat);
      factor = as_float;
    } else if (value.dtype() != DataType::kDouble) {
      factor = ops::Cast(scope, scale, value.dtype());
    }
    scaled.push_back(ops::Mul(scope, value, factor));
  }
  return scaled;
}

std::vector<Output> ClipByGlobalNorm(const Scope& scope, const std::vector<Output>& values,
                                     double clip_norm) {
  const Scope s = scope.NewSubScope("clip_by_global_norm");
  return ScaleValues(s, values, ClipScale(s, GlobalNorm(s, values), clip_norm));
}

}  // namespace weft::train
