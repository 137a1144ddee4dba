// Checkpoint ops (the reference's SaveV2 / RestoreV2): they run on the device that holds the
// variables, so on a cluster every task reads and writes its own tensors and no variable passes
// through the client. Paths travel as uint8 tensors holding UTF-8 bytes (Weft tensors have no
// string dtype); the tensor names, dtypes and shapes are attrs fixed when the graph is built.
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {
namespace {

// The directory input is a vector of bytes.
Status DirectoryIsVector(InferenceContext& context) { return context.WithRank(0, 1); }

Status SaveShape(InferenceContext& context) { return DirectoryIsVector(context); }

Status RestoreShape(InferenceContext& context) {
  WEFT_RETURN_IF_ERROR(DirectoryIsVector(context));
  std::vector<TensorShape> shapes;
  WEFT_RETURN_IF_ERROR(context.GetAttr("shapes", &shapes));
  if (static_cast<int>(shapes.size()) != context.num_outputs()) {
    return InvalidArgument("RestoreV2 has ", context.num_outputs(), " dtypes but ", shapes.size(),
                           " shapes");
  }
  for (int i = 0; i < context.num_outputs(); ++i) context.set_output(i, PartialShape(shapes[i]));
  return Status::OK();
}

}  // namespace

void RegisterIoOps(OpRegistry& registry) {
  registry.RegisterOrDie(
      OpDefBuilder("SaveV2")
          .Input("directory: uint8")
          .Input("tensors: dtypes")
          .HostMemory("directory")
          .Attr("tensor_names: list(string)")
          .Attr("shard_file: string")
          .Attr("dtypes: list(type)")
          .Attr("background: bool = false")
          .SetIsStateful()
          .SetShapeFn(SaveShape)
          .Doc("Writes `tensors`, named `tensor_names`, to the safetensors file `shard_file` in "
               "the directory whose path `directory` holds (UTF-8 bytes): under a temporary "
               "name, fsynced, then renamed. Each tensor's CRC32C goes in the file's metadata. "
               "`background`: written beside training, paced in small pieces."));
  registry.RegisterOrDie(
      OpDefBuilder("RestoreV2")
          .Input("directory: uint8")
          .Output("tensors: dtypes")
          .HostMemory("directory")
          .Attr("tensor_names: list(string)")
          .Attr("dtypes: list(type)")
          .Attr("shapes: list(shape)")
          .Attr("whole_names: list(string) = []")
          .Attr("whole_rows: list(int) = []")
          .Attr("offsets: list(int) = []")
          .SetIsStateful()
          .SetShapeFn(RestoreShape)
          .Doc("Reads `tensor_names` from the checkpoint in the directory whose path `directory` "
               "holds: its manifest says which shard file holds each one; dtypes, shapes, file "
               "sizes and CRC32Cs are checked against the manifest and `dtypes` / `shapes`. "
               "`whole_names`, `whole_rows` and `offsets` (empty, or one per name): a tensor "
               "with a non-empty whole name is rows [offset, offset + its rows) of that tensor, "
               "which has `whole_rows` rows; when the checkpoint cut it differently, its rows are "
               "read from the parts that hold them."));
}

}  // namespace weft::ops
