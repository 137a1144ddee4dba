// _Arg and _Retval: how feeds enter and fetches leave a step's graph (see framework/call_frame.h).
// The runtime adds them when it prepares a step; users never write them.
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {

void RegisterFunctionOps(OpRegistry& registry) {
  registry.RegisterOrDie(OpDefBuilder("_Arg")
                             .Output("output: T")
                             .HostMemory("output")
                             .Attr("T: type")
                             .Attr("index: int >= 0")
                             .Attr("shape: shape")
                             .SetIsStateful()
                             .SetIsInternal()
                             .SetShapeFn(shape_fn::ShapeFromShapeAttr)
                             .Doc("The value fed for argument `index` of the step."));
  registry.RegisterOrDie(OpDefBuilder("_Retval")
                             .Input("input: T")
                             .HostMemory("input")
                             .Attr("T: type")
                             .Attr("index: int >= 0")
                             .SetIsStateful()
                             .SetIsInternal()
                             .SetShapeFn(shape_fn::UnknownShape)
                             .Doc("Returns `input` as fetch `index` of the step."));
}

}  // namespace weft::ops
