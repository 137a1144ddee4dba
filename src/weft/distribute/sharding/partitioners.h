// Partitioners decide into how many shards a variable is cut along its first dimension (the
// reference's tf.distribute.experimental.partitioners), and ShardRows how many rows each shard
// gets. Only the first dimension is ever cut, as in the reference's parameter-server training.
// Values; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/core/tensor_shape.h"

namespace weft::distribute {

class Partitioner {
 public:
  // Exactly `num_shards` shards (fewer when the variable has fewer rows).
  static Partitioner FixedShards(int64_t num_shards);
  // As many shards as keep each at least `min_shard_bytes`, at most `max_shards` (the reference's
  // defaults: 256 KiB, 1 shard, i.e. no sharding).
  static Partitioner MinSize(int64_t min_shard_bytes = 256 << 10, int64_t max_shards = 1);
  // As few shards as keep each at most `max_shard_bytes`; `max_shards` 0 means no cap.
  static Partitioner MaxSize(int64_t max_shard_bytes, int64_t max_shards = 0);
  // Weft's default for parameter servers: a variable above `threshold_bytes` is cut across all
  // `num_tasks` (no task holds a whole large table), a smaller one stays whole.
  static Partitioner AcrossAll(int64_t num_tasks, int64_t threshold_bytes = 256 << 10);

  // The number of shards, >= 1, for a variable of `shape` and `dtype` (1 for a scalar).
  int64_t NumShards(const TensorShape& shape, DataType dtype) const;

 private:
  using Rule = std::function<int64_t(int64_t bytes)>;  // the number of shards wanted
  explicit Partitioner(Rule rule) : rule_(std::move(rule)) {}

  Rule rule_;
};

// How many of `rows` rows each of `num_shards` shards holds: as even as possible, the first ones
// one row more (10 rows in 3 shards: 4, 3, 3), as the reference splits them.
std::vector<int64_t> ShardRows(int64_t rows, int64_t num_shards);

}  // namespace weft::distribute
