// Random ops: RandomUniform in [0, 1), RandomStandardNormal, and TruncatedNormal (standard normal
// redrawn beyond two standard deviations). Stateful: each run draws new values. With `seed` or
// `seed2` nonzero the sequence is fixed, the same on every run of the program and every thread
// count; both zero picks a nondeterministic seed.
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

// Output 0 has the shape held by the 1-D int input 0: exact when constant, else rank only.
Status RandomShape(InferenceContext& context) { return context.SetOutputFromShapeInput(0, 0); }

void RegisterRandomOp(OpRegistry& registry, const char* name, const char* doc) {
  registry.RegisterOrDie(OpDefBuilder(name)
                             .Input("shape: T")
                             .HostMemory("shape")
                             .Output("output: dtype")
                             .Attr("seed: int = 0")
                             .Attr("seed2: int = 0")
                             .Attr("dtype: {float32, float64}")
                             .Attr("T: {int32, int64}")
                             .SetIsStateful()
                             .SetShapeFn(RandomShape)
                             .Doc(doc));
}

}  // namespace

void RegisterRandomOps(OpRegistry& registry) {
  RegisterRandomOp(registry, "RandomUniform", "Uniform random values in [0, 1).");
  RegisterRandomOp(registry, "RandomStandardNormal", "Normal random values, mean 0, stddev 1.");
  RegisterRandomOp(registry, "TruncatedNormal",
                   "Normal random values, mean 0, stddev 1, redrawn when beyond 2 stddev.");
}

}  // namespace weft::ops
