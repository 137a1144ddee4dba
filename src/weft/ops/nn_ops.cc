#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {

void RegisterNnOps(OpRegistry& registry) { (void)registry; }

}  // namespace weft::ops
