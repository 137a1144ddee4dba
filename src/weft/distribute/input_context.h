// InputContext: what a dataset function given to Strategy::DistributeDatasetsFromFunction knows
// about the input pipeline it builds, as the reference's tf.distribute.InputContext. There is one
// input pipeline per worker process (id = the worker's index among num_input_pipelines()); each
// yields its worker's batches, per-replica batch x that worker's replicas. Immutable value type.
//
//   StatusOr<DistributedDataset> dataset = strategy->DistributeDatasetsFromFunction(
//       [&](const InputContext& context) -> StatusOr<DistributedDataset::BatchSource> {
//         WEFT_ASSIGN_OR_RETURN(int64_t per_replica, context.GetPerReplicaBatchSize(128));
//         // Shard input_pipeline_id() of num_input_pipelines(), in batches of
//         // per_replica * strategy->num_local_replicas() examples.
//         return MyShardedBatches(context.input_pipeline_id(), context.num_input_pipelines(),
//                                 per_replica * strategy->num_local_replicas());
//       });
#pragma once

#include <cstdint>

#include "weft/core/statusor.h"

namespace weft::distribute {

class InputContext {
 public:
  // The defaults describe a single pipeline feeding a single replica.
  explicit InputContext(int num_input_pipelines = 1, int input_pipeline_id = 0,
                        int num_replicas_in_sync = 1)
      : num_input_pipelines_(num_input_pipelines),
        input_pipeline_id_(input_pipeline_id),
        num_replicas_in_sync_(num_replicas_in_sync) {}

  // Input pipelines across the job: one per worker.
  int num_input_pipelines() const { return num_input_pipelines_; }
  // This pipeline's index in [0, num_input_pipelines()): the worker's task index.
  int input_pipeline_id() const { return input_pipeline_id_; }
  // Replicas of every worker that consume one global batch together.
  int num_replicas_in_sync() const { return num_replicas_in_sync_; }

  // global_batch_size / num_replicas_in_sync(). InvalidArgument naming both numbers when the
  // global batch is not positive or not divisible by the replica count (replicas must all get
  // equal slices, or their mean gradients would be weighted unequally).
  StatusOr<int64_t> GetPerReplicaBatchSize(int64_t global_batch_size) const;

 private:
  int num_input_pipelines_;
  int input_pipeline_id_;
  int num_replicas_in_sync_;
};

}  // namespace weft::distribute
