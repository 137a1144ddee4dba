// DistributedDataset: Strategy::ExperimentalDistributeDataset's result. It wraps a source of
// global batches (each one tensor per component, e.g. images and labels, batched along dim 0 with
// the global batch size) and hands out, per global batch, every replica's equal slice of every
// component, sharing the batch's buffers. A global batch not divisible by the number of replicas
// is an InvalidArgument naming both numbers. Not thread-safe (one consumer).
#pragma once

#include <functional>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/core/tensor.h"

namespace weft::distribute {

class Strategy;

class DistributedDataset {
 public:
  // Fills `batch` with the next global batch, one tensor per component; returns false at the end.
  using GlobalBatchSource = std::function<StatusOr<bool>(std::vector<Tensor>* batch)>;

  DistributedDataset(const Strategy& strategy, GlobalBatchSource source)
      : strategy_(strategy), source_(std::move(source)) {}

  // per_replica[r][c] is replica r's slice of component c. Returns false at the end.
  StatusOr<bool> Next(std::vector<std::vector<Tensor>>* per_replica);

 private:
  const Strategy& strategy_;
  GlobalBatchSource source_;
};

}  // namespace weft::distribute
