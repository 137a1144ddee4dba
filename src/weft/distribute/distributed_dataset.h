// DistributedDataset: the result of Strategy::ExperimentalDistributeDataset and
// Strategy::DistributeDatasetsFromFunction. It wraps a source of this worker's batches (each one
// tensor per component, e.g. images and labels, batched along dim 0: the global batch with one
// worker, this worker's share of it with several) and hands out, per batch, every local replica's
// equal slice of every component, sharing the batch's buffers. A batch not divisible by the number
// of local replicas is an InvalidArgument naming both numbers. Not thread-safe (one consumer).
#pragma once

#include <functional>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/core/tensor.h"

namespace weft::distribute {

class Strategy;

class DistributedDataset {
 public:
  // Fills `batch` with this worker's next batch, one tensor per component; returns false at the
  // end.
  using BatchSource = std::function<StatusOr<bool>(std::vector<Tensor>* batch)>;
  // The name ExperimentalDistributeDataset's callers know: with one worker, the global batch.
  using GlobalBatchSource = BatchSource;

  DistributedDataset(const Strategy& strategy, BatchSource source)
      : strategy_(strategy), source_(std::move(source)) {}

  // per_replica[r][c] is replica r's slice of component c. Returns false at the end.
  StatusOr<bool> Next(std::vector<std::vector<Tensor>>* per_replica);

 private:
  const Strategy& strategy_;
  BatchSource source_;
};

}  // namespace weft::distribute
