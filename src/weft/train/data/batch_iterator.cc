// BatchIterator: per-epoch permutation, then row gathers into reused batch buffers.
#include "weft/train/data/batch_iterator.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

namespace weft::train {
namespace {

// A uniform integer in [0, bound) by rejection, so results do not depend on the standard
// library's (unspecified) distribution algorithms.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
  for (;;) {
    uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

}  // namespace

void ShuffledOrder(uint64_t seed, int64_t epoch, int64_t n, std::vector<int64_t>* order) {
  order->resize(n);
  std::iota(order->begin(), order->end(), int64_t{0});
  const uint64_t e = static_cast<uint64_t>(epoch);
  // seed_seq's mixing is fully specified by the standard, as is mt19937_64's seeding from it.
  std::seed_seq sequence{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                         static_cast<uint32_t>(e), static_cast<uint32_t>(e >> 32)};
  std::mt19937_64 rng(sequence);
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(UniformBelow(rng, static_cast<uint64_t>(i) + 1));
    std::swap((*order)[i], (*order)[j]);
  }
}

StatusOr<BatchIterator> BatchIterator::Create(const Dataset& dataset, const BatchOptions& options) {
  if (options.batch_size <= 0) {
    return InvalidArgument("batch_size must be positive, got ", options.batch_size);
  }
  if (options.num_shards < 1 || options.shard_index < 0 ||
      options.shard_index >= options.num_shards) {
    return InvalidArgument("shard ", options.shard_index, " of ", options.num_shards,
                           " does not exist");
  }
  if (options.batch_size % options.num_shards != 0) {
    return InvalidArgument("the global batch size ", options.batch_size,
                           " is not divisible by the ", options.num_shards, " workers");
  }
  if (options.num_shards > 1 && !options.drop_remainder) {
    return InvalidArgument("sharded batches need drop_remainder (a last partial batch could not ",
                           "be split evenly over ", options.num_shards, " workers)");
  }
  const Tensor& images = dataset.images;
  const Tensor& labels = dataset.labels;
  if (images.dtype() != DataType::kFloat || images.dims() != 2) {
    return InvalidArgument("dataset images must be float32 [N, D], got ",
                           DataTypeName(images.dtype()), " ", images.shape());
  }
  if (labels.dtype() != DataType::kInt64 || labels.dims() != 1 ||
      labels.dim_size(0) != images.dim_size(0)) {
    return InvalidArgument("dataset labels must be int64 [", images.dim_size(0), "], got ",
                           DataTypeName(labels.dtype()), " ", labels.shape());
  }
  return BatchIterator(dataset, options);
}

BatchIterator::BatchIterator(const Dataset& dataset, const BatchOptions& options)
    : dataset_(dataset), options_(options) {
  StartEpoch(0);
}

void BatchIterator::StartEpoch(int64_t epoch) {
  epoch_ = epoch;
  position_ = 0;
  const int64_t n = dataset_.labels.dim_size(0);
  if (options_.shuffle) {
    ShuffledOrder(options_.seed, epoch, n, &order_);
  } else if (static_cast<int64_t>(order_.size()) != n) {
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), int64_t{0});
  }
}

void BatchIterator::SkipBatches(int64_t batches) {
  const int64_t n = static_cast<int64_t>(order_.size());
  const int64_t remaining_batches = (n - position_ + options_.batch_size - 1) / options_.batch_size;
  position_ = batches >= remaining_batches
                  ? n
                  : position_ + std::max<int64_t>(0, batches) * options_.batch_size;
}

int64_t BatchIterator::NumBatches() const {
  const int64_t n = dataset_.labels.dim_size(0);
  const int64_t b = options_.batch_size;
  return options_.drop_remainder ? n / b : (n + b - 1) / b;
}

Tensor BatchIterator::ReuseOrAllocate(Tensor& cached, DataType dtype, const TensorShape& full_shape,
                                      int64_t rows) {
  if (!cached.RefCountIsOne()) cached = Tensor(dtype, full_shape);
  return rows == full_shape.dim_size(0) ? cached : cached.Slice(0, rows);
}

bool BatchIterator::Next(Tensor* images, Tensor* labels) {
  // Drop the caller's references first, so that the previous batch's buffers become reusable.
  *images = Tensor();
  *labels = Tensor();
  const int64_t n = static_cast<int64_t>(order_.size());
  const int64_t rows = std::min(options_.batch_size, n - position_);
  if (rows <= 0 || (rows < options_.batch_size && options_.drop_remainder)) {
    position_ = n;
    return false;
  }
  const int64_t share = rows / options_.num_shards;
  const int64_t begin = position_ + options_.shard_index * share;
  position_ += rows;
  if (!options_.shuffle) {
    // In order, a batch is a contiguous block: hand out views of the dataset, copying nothing.
    // Views share the dataset's buffer, so kernels will not write into them in place.
    *images = dataset_.images.Slice(begin, begin + share);
    *labels = dataset_.labels.Slice(begin, begin + share);
    return true;
  }
  const int64_t width = dataset_.images.dim_size(1);
  const int64_t capacity = std::min(options_.batch_size, n) / options_.num_shards;
  *images = ReuseOrAllocate(image_buffer_, DataType::kFloat, TensorShape({capacity, width}), share);
  *labels = ReuseOrAllocate(label_buffer_, DataType::kInt64, TensorShape({capacity}), share);
  const float* src_images = dataset_.images.data<float>();
  const int64_t* src_labels = dataset_.labels.data<int64_t>();
  float* dst_images = images->data<float>();
  int64_t* dst_labels = labels->data<int64_t>();
  const size_t row_bytes = static_cast<size_t>(width) * sizeof(float);
  for (int64_t i = 0; i < share; ++i) {
    const int64_t example = order_[begin + i];
    std::memcpy(dst_images + i * width, src_images + example * width, row_bytes);
    dst_labels[i] = src_labels[example];
  }
  return true;
}

}  // namespace weft::train
