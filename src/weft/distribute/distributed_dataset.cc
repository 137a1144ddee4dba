#include "weft/distribute/distributed_dataset.h"

#include "weft/distribute/strategy.h"

namespace weft::distribute {

StatusOr<bool> DistributedDataset::Next(std::vector<std::vector<Tensor>>* per_replica) {
  std::vector<Tensor> batch;
  WEFT_ASSIGN_OR_RETURN(bool more, source_(&batch));
  if (!more) return false;
  const int replicas = strategy_.num_local_replicas();
  per_replica->assign(replicas, std::vector<Tensor>(batch.size()));
  for (size_t c = 0; c < batch.size(); ++c) {
    StatusOr<std::vector<Tensor>> slices = strategy_.SplitBatch(batch[c]);
    if (!slices.ok()) {
      return slices.status().WithContext(StrCat("component ", c, " of the global batch"));
    }
    for (int r = 0; r < replicas; ++r) (*per_replica)[r][c] = std::move((*slices)[r]);
  }
  return true;
}

}  // namespace weft::distribute
