// BatchIterator: walks a Dataset in mini-batches, one epoch at a time. Each epoch visits every
// example once, in order or in a permutation drawn from std::mt19937_64 seeded from (seed, epoch),
// so the order depends only on those two numbers (not on threads, timing or the platform). Batches
// are gathered with one memcpy per example into buffers that are reused from step to step when the
// caller no longer holds the previous batch. With num_shards > 1 (one shard per worker of a
// multi-worker job) every shard walks the same global batches and gathers only its own contiguous
// share of each (auto-sharding by example): batch_size / num_shards examples. Not synchronised: use
// from one thread at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/core/tensor.h"
#include "weft/train/data/dataset.h"

namespace weft::train {

struct BatchOptions {
  int64_t batch_size = 128;
  bool shuffle = true;
  uint64_t seed = 0;
  // Drop the last batch of an epoch when it has fewer than batch_size examples.
  bool drop_remainder = true;
  // The global batch split into num_shards equal shares; this iterator yields share shard_index.
  int64_t num_shards = 1;
  int64_t shard_index = 0;
};

class BatchIterator {
 public:
  // Starts at epoch 0. InvalidArgument when batch_size <= 0 or the dataset is not a float32
  // [N, D] / int64 [N] pair. The iterator keeps its own reference to the dataset's tensors.
  static StatusOr<BatchIterator> Create(const Dataset& dataset, const BatchOptions& options);

  // Restarts at the beginning of `epoch` (any value; epochs need not be visited in order).
  void StartEpoch(int64_t epoch);
  // Moves past the next `batches` batches of this epoch without gathering them (to resume where a
  // run stopped); past the end, the epoch is exhausted.
  void SkipBatches(int64_t batches);

  // Fills *images (float32 [B, D]) and *labels (int64 [B]) with the next batch of this epoch and
  // returns true; returns false, leaving both empty, once the epoch is exhausted. B is batch_size
  // (batch_size / num_shards with shards) except for a kept last partial batch. Whatever *images
  // and *labels held before is released first, so passing the previous batch back in lets its
  // buffers be reused.
  bool Next(Tensor* images, Tensor* labels);

  // Batches per epoch.
  int64_t NumBatches() const;
  int64_t epoch() const { return epoch_; }
  const BatchOptions& options() const { return options_; }
  // The example order of the current epoch (indices into the dataset).
  const std::vector<int64_t>& order() const { return order_; }

 private:
  BatchIterator(const Dataset& dataset, const BatchOptions& options);

  // Returns the cached buffer when nobody else holds it, else allocates a new [rows, ...] one.
  static Tensor ReuseOrAllocate(Tensor& cached, DataType dtype, const TensorShape& full_shape,
                                int64_t rows);

  Dataset dataset_;
  BatchOptions options_;
  int64_t epoch_ = 0;
  std::vector<int64_t> order_;
  int64_t position_ = 0;  // next index into order_
  Tensor image_buffer_;   // float32 [batch_size, D], reused across steps
  Tensor label_buffer_;   // int64 [batch_size]
};

// Fills `order` with 0..n-1 permuted by a Fisher-Yates shuffle driven by std::mt19937_64 seeded
// from (seed, epoch). The same arguments give the same order on every platform.
void ShuffledOrder(uint64_t seed, int64_t epoch, int64_t n, std::vector<int64_t>* order);

}  // namespace weft::train
