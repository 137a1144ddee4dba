// Per-worker dataset ops (the reference's MakeIterator / IteratorGetNext, serving
// ClusterCoordinator's per-worker datasets): a worker builds an iterator over a pipeline described
// by a DatasetDef (data::Dataset::ToDef) and keeps it in its device's ResourceMgr under
// `shared_name`; each IteratorGetNext on that device takes the next element. Unlike the
// reference, the dataset travels as an attr (Weft tensors have no string or variant dtype), so
// a graph names one MakeIterator per distinct pipeline. Internal: PerWorkerDataset
// (distribute/coordinator/per_worker_dataset.h) builds them.
#include "weft/framework/shape_inference.h"
#include "weft/ops/register_ops.h"

namespace weft::ops {

void RegisterDatasetOps(OpRegistry& registry) {
  registry.RegisterOrDie(
      OpDefBuilder("MakeIterator")
          .Attr("dataset: string")
          .Attr("shared_name: string")
          .SetIsStateful()
          .SetShapeFn(shape_fn::UnknownShape)
          .SetIsInternal()
          .Doc("Builds the pipeline the serialized DatasetDef `dataset` describes and keeps an "
               "iterator over it on this device under `shared_name`, replacing any iterator "
               "kept there (running it again starts the pipeline over)."));
  registry.RegisterOrDie(
      OpDefBuilder("IteratorGetNext")
          .Output("components: output_types")
          .Attr("shared_name: string")
          .Attr("output_types: list(type)")
          .SetIsStateful()
          .SetShapeFn(shape_fn::UnknownShape)
          .SetIsInternal()
          .Doc("The next element of the iterator kept under `shared_name` on this device: "
               "OutOfRange at the end of its sequence, FailedPrecondition when no MakeIterator "
               "made one here, InvalidArgument when the element's types are not `output_types`."));
}

}  // namespace weft::ops
