#include "weft/distribute/sharding/partitioners.h"

#include <algorithm>

namespace weft::distribute {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Partitioner Partitioner::FixedShards(int64_t num_shards) {
  return Partitioner([num_shards](int64_t) { return num_shards; });
}

Partitioner Partitioner::MinSize(int64_t min_shard_bytes, int64_t max_shards) {
  return Partitioner([min_shard_bytes, max_shards](int64_t bytes) {
    return std::min(max_shards, bytes / std::max<int64_t>(min_shard_bytes, 1));
  });
}

Partitioner Partitioner::MaxSize(int64_t max_shard_bytes, int64_t max_shards) {
  return Partitioner([max_shard_bytes, max_shards](int64_t bytes) {
    const int64_t needed = CeilDiv(bytes, std::max<int64_t>(max_shard_bytes, 1));
    return max_shards > 0 ? std::min(max_shards, needed) : needed;
  });
}

Partitioner Partitioner::AcrossAll(int64_t num_tasks, int64_t threshold_bytes) {
  return Partitioner([num_tasks, threshold_bytes](int64_t bytes) {
    return bytes > threshold_bytes ? num_tasks : int64_t{1};
  });
}

int64_t Partitioner::NumShards(const TensorShape& shape, DataType dtype) const {
  if (shape.dims() == 0) return 1;
  const int64_t rows = shape.dim_size(0);
  const int64_t bytes = shape.num_elements() * static_cast<int64_t>(DataTypeSize(dtype));
  const int64_t shards = rule_(bytes);
  return std::clamp<int64_t>(shards, 1, std::max<int64_t>(rows, 1));
}

std::vector<int64_t> ShardRows(int64_t rows, int64_t num_shards) {
  num_shards = std::max<int64_t>(num_shards, 1);
  std::vector<int64_t> sizes(num_shards, rows / num_shards);
  for (int64_t i = 0; i < rows % num_shards; ++i) ++sizes[i];
  return sizes;
}

}  // namespace weft::distribute
