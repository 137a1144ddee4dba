// PerWorkerDataset: the graph side of the reference's ClusterCoordinator.create_per_worker_dataset.
// Every worker iterates over a dataset of its own, which it builds itself from a description of
// the pipeline (data::Dataset::ToDef: sources by their files or tensors, transformations by their
// arguments), so no element passes through the coordinator. Create adds, for each worker, a
// MakeIterator node holding that worker's pipeline, and one IteratorGetNext on the worker device
// that every worker's session maps to itself; a step built on components() reads the next element
// of the worker that runs it. ClusterCoordinator::CreatePerWorkerDataset makes the iterators (and
// makes a worker's again after it was lost: it starts its dataset over, as the reference does).
//
//   auto dataset = PerWorkerDataset::Create(root, "input", strategy->num_worker_tasks(),
//       strategy->devices()[0], [&](const InputContext& context) {
//         return examples.Shard(context.num_input_pipelines(), context.input_pipeline_id())
//             .Shuffle(1024, 7).Repeat().Batch(32);
//       }).value();
//   Output images = dataset.components()[0];  // ... the step, then every worker's session ...
//   coordinator.CreatePerWorkerDataset(dataset, run_targets_in_worker_session);
//
// Immutable after Create; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/data/dataset.h"
#include "weft/distribute/input_context.h"
#include "weft/graph/builder/scope.h"

namespace weft::distribute {

// Worker `context.input_pipeline_id()`'s dataset, of `context.num_input_pipelines()` workers.
using PerWorkerDatasetFn = std::function<data::Dataset(const InputContext& context)>;

class PerWorkerDataset {
 public:
  // Calls `dataset_fn` once per worker (on this process) and adds the nodes above to `scope`'s
  // graph, named under `name`, on `worker_device` ("/job:worker/replica:0/device:CPU:0" for
  // ParameterServerStrategy). The components' dtypes are those of the first element of worker
  // 0's dataset, read here once (a worker whose elements differ fails its steps naming the
  // component). Errors name the worker whose dataset is at fault: one that has no description (a
  // Map of a C++ function), or worker 0's when it is empty.
  static StatusOr<PerWorkerDataset> Create(const Scope& scope, std::string_view name,
                                           int num_workers, const std::string& worker_device,
                                           const PerWorkerDatasetFn& dataset_fn);

  // The shared name of the iterators on the workers (unique in the graph).
  const std::string& name() const { return name_; }
  int num_workers() const { return static_cast<int>(make_iterator_targets_.size()); }
  // The next element of the worker that runs the step: IteratorGetNext's outputs. A worker at
  // the end of its dataset fails the step with OutOfRange.
  const std::vector<Output>& components() const { return components_; }
  const std::vector<DataType>& dtypes() const { return dtypes_; }
  // Worker 0's first element, read by Create (its shapes tell a model what it is built for).
  const data::Element& first_element() const { return first_element_; }
  // The node to run on `worker` to make (or remake) its iterator.
  const std::string& MakeIteratorTarget(int worker) const {
    return make_iterator_targets_[static_cast<size_t>(worker)];
  }

 private:
  PerWorkerDataset() = default;

  std::string name_;
  std::vector<std::string> make_iterator_targets_;
  std::vector<Output> components_;
  std::vector<DataType> dtypes_;
  data::Element first_element_;
};

}  // namespace weft::distribute
