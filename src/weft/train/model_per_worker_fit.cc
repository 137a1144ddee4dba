// Model::Fit of per-worker datasets (see model.h): the datasets are added to the graph and made on
// the workers, a training part reads them there, and Fit's loop runs that part with nothing fed.
// The loop still walks a dataset on this process, for its epochs, positions and callbacks: worker
// 0's first batch, repeated, which is checked like any batch but never sent.
#include <utility>

#include "weft/core/str_util.h"
#include "weft/train/model.h"
#include "weft/train/model_graph.h"

namespace weft::train {

StatusOr<History> Model::Fit(const distribute::PerWorkerDatasetFn& dataset_fn,
                             const FitOptions& options) {
  if (strategy_ == nullptr) return FailedPrecondition("model '", name_, "' is not compiled");
  const int workers = static_cast<int>(strategy_->extended().WorkerSessionOptions({}).size());
  if (workers == 0) {
    return InvalidArgument(
        "Fit of per-worker datasets needs an asynchronous strategy (ParameterServerStrategy), "
        "whose workers read their own datasets");
  }
  if (options.steps_per_epoch < 1) {
    return InvalidArgument(
        "Fit of per-worker datasets needs steps_per_epoch (the workers' datasets are theirs: "
        "this process cannot see where an epoch ends), got ",
        options.steps_per_epoch);
  }
  if (options_.exactly_once_input) {
    return InvalidArgument(
        "Fit of per-worker datasets cannot give exactly-once input: the coordinator leases only "
        "batches it reads itself (Fit a data::Dataset instead)");
  }
  if (options_.steps_per_execution != 1) {
    return InvalidArgument(
        "Fit of per-worker datasets runs one step per function, got "
        "steps_per_execution ",
        options_.steps_per_execution);
  }
  WEFT_ASSIGN_OR_RETURN(
      distribute::PerWorkerDataset dataset,
      distribute::PerWorkerDataset::Create(EnsureGraph().root, "per_worker_dataset", workers,
                                           strategy_->devices()[0], dataset_fn));
  // Worker 0's first batch, made an element of a dataset whose every element is that batch (its
  // components keep their buffers: the loop copies nothing).
  std::vector<Tensor> stacked;
  for (const Tensor& component : dataset.first_element()) {
    std::vector<int64_t> dims = {1};
    for (int64_t d : component.shape().dim_sizes()) dims.push_back(d);
    stacked.push_back(component.Reshaped(TensorShape(dims)));
  }
  const data::Dataset first_batch = data::Dataset::FromTensors(std::move(stacked)).Repeat();
  {
    data::Element first;
    WEFT_RETURN_IF_ERROR(StartPass(first_batch, /*with_labels=*/true, "Fit", &first).status());
  }
  const size_t inputs = signature_.inputs.size();
  const std::vector<Tensor> labels(dataset.first_element().begin() + inputs,
                                   dataset.first_element().end());
  WEFT_RETURN_IF_ERROR(BuildPerWorkerTraining(dataset.components(), labels));
  WEFT_RETURN_IF_ERROR(coordinator_->CreatePerWorkerDataset(
      dataset, [this](int worker, const std::vector<std::string>& targets) {
        std::vector<Tensor> outputs;
        return WorkerSession(worker)->Run({}, {}, targets, &outputs);
      }));
  const ReplicaNames& names = graph_->per_worker_training;
  per_worker_step_ = BatchStep{{}, names.outputs[0], {names.steps[0]}};
  struct Forget {
    Model& model;
    ~Forget() { model.per_worker_step_.reset(); }
  } forget{*this};
  return Fit(first_batch, options);
}

}  // namespace weft::train
