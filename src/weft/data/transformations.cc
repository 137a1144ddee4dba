// Shuffle, Batch, Repeat, Map, Shard and Take: each node keeps its validated arguments and its
// input node; each iterator owns its input's iterator and runs on the consumer's thread.
#include <cstring>
#include <random>
#include <utility>

#include "weft/core/str_util.h"
#include "weft/data/dataset_node.h"

namespace weft::data {
namespace {

using IteratorPtr = std::unique_ptr<Iterator>;

// ---- Shuffle ----------------------------------------------------------------------------------

// Moves elements of `input` into `elements` until it holds `size` or the input ends (then
// *input_done is set); an input error is returned as is.
Status FillFrom(Iterator& input, int64_t size, std::vector<Element>* elements, bool* input_done) {
  while (!*input_done && static_cast<int64_t>(elements->size()) < size) {
    Element next;
    bool end = false;
    WEFT_RETURN_IF_ERROR(input.GetNext(&next, &end));
    if (end) {
      *input_done = true;
    } else {
      elements->push_back(std::move(next));
    }
  }
  return Status::OK();
}

// tf.data's reservoir: fill a buffer, then repeatedly emit a random slot and refill it from the
// input. The slot is the generator's raw output modulo the buffer size (not a
// std::uniform_int_distribution, whose algorithm differs between standard libraries), so a seed
// gives the same order on every platform.
class ShuffleIterator final : public Iterator {
 public:
  ShuffleIterator(IteratorPtr input, int64_t buffer_size, uint64_t seed)
      : input_(std::move(input)), buffer_size_(buffer_size), rng_(seed) {}

  Status GetNext(Element* element, bool* end_of_sequence) override {
    WEFT_RETURN_IF_ERROR(FillFrom(*input_, buffer_size_, &buffer_, &input_done_));
    *end_of_sequence = buffer_.empty();
    if (*end_of_sequence) return Status::OK();
    const size_t slot = static_cast<size_t>(rng_() % buffer_.size());
    *element = std::move(buffer_[slot]);
    buffer_[slot] = std::move(buffer_.back());
    buffer_.pop_back();
    return Status::OK();
  }

 private:
  IteratorPtr input_;
  int64_t buffer_size_;
  std::mt19937_64 rng_;
  std::vector<Element> buffer_;
  bool input_done_ = false;
};

class ShuffleNode final : public DatasetNode {
 public:
  ShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed)
      : input_(std::move(input)), buffer_size_(buffer_size), seed_(seed) {}

  StatusOr<IteratorPtr> MakeIterator(const IteratorContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(IteratorPtr input, input_->MakeIterator(ctx));
    // Each Repeat epoch draws a different order; all of them follow from seed_ alone.
    const uint64_t seed = MixSeed(seed_ ^ MixSeed(ctx.epoch));
    return IteratorPtr(std::make_unique<ShuffleIterator>(std::move(input), buffer_size_, seed));
  }

  Status ToDef(proto::DatasetDef* def) const override {
    proto::ShuffleDatasetDef* shuffle = def->mutable_shuffle();
    shuffle->set_buffer_size(buffer_size_);
    shuffle->set_seed(seed_);
    return input_->ToDef(shuffle->mutable_input());
  }

 private:
  NodePtr input_;
  int64_t buffer_size_;
  uint64_t seed_;
};

// ---- Batch ------------------------------------------------------------------------------------

// Stacks the i-th components of `elements` along a new dimension 0.
StatusOr<Element> Stack(const std::vector<Element>& elements) {
  const Element& first = elements.front();
  Element batch;
  for (size_t c = 0; c < first.size(); ++c) {
    const Tensor& head = first[c];
    for (size_t e = 1; e < elements.size(); ++e) {
      if (elements[e].size() != first.size()) {
        return InvalidArgument("Batch: element ", e, " of the batch has ", elements[e].size(),
                               " components but element 0 has ", first.size());
      }
      const Tensor& other = elements[e][c];
      if (other.dtype() != head.dtype() || !(other.shape() == head.shape())) {
        return InvalidArgument("Batch: component ", c, " is ", DataTypeName(head.dtype()), " ",
                               head.shape(), " in element 0 of the batch but ",
                               DataTypeName(other.dtype()), " ", other.shape(), " in element ", e);
      }
    }
    std::vector<int64_t> dims = head.shape().dim_sizes();
    dims.insert(dims.begin(), static_cast<int64_t>(elements.size()));
    WEFT_ASSIGN_OR_RETURN(Tensor stacked,
                          Tensor::Allocate(head.dtype(), TensorShape(std::move(dims))));
    char* out = static_cast<char*>(stacked.raw_data());
    const size_t row_bytes = head.TotalBytes();
    for (size_t e = 0; e < elements.size(); ++e) {
      if (row_bytes > 0) std::memcpy(out + e * row_bytes, elements[e][c].raw_data(), row_bytes);
    }
    batch.push_back(std::move(stacked));
  }
  return batch;
}

class BatchIterator final : public Iterator {
 public:
  BatchIterator(IteratorPtr input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}

  Status GetNext(Element* element, bool* end_of_sequence) override {
    std::vector<Element> pending;
    // An input error drops the partial batch, as in tf.data.
    WEFT_RETURN_IF_ERROR(FillFrom(*input_, batch_size_, &pending, &input_done_));
    const bool short_batch = static_cast<int64_t>(pending.size()) < batch_size_;
    *end_of_sequence = pending.empty() || (short_batch && drop_remainder_);
    if (*end_of_sequence) return Status::OK();
    WEFT_ASSIGN_OR_RETURN(*element, Stack(pending));
    return Status::OK();
  }

 private:
  IteratorPtr input_;
  int64_t batch_size_;
  bool drop_remainder_;
  bool input_done_ = false;
};

// ---- Repeat -----------------------------------------------------------------------------------

class RepeatIterator final : public Iterator {
 public:
  RepeatIterator(NodePtr input, int64_t count, IteratorContext ctx)
      : input_(std::move(input)), count_(count), ctx_(ctx) {}

  Status GetNext(Element* element, bool* end_of_sequence) override {
    while (count_ < 0 || epoch_ < count_) {
      if (current_ == nullptr) {
        // Nested repeats give every inner pass its own epoch number.
        IteratorContext inner{ctx_.epoch * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(epoch_)};
        WEFT_ASSIGN_OR_RETURN(current_, input_->MakeIterator(inner));
        produced_in_epoch_ = false;
      }
      bool end = false;
      WEFT_RETURN_IF_ERROR(current_->GetNext(element, &end));
      if (!end) {
        produced_in_epoch_ = true;
        *end_of_sequence = false;
        return Status::OK();
      }
      current_.reset();
      ++epoch_;
      // An empty pass would make Repeat(-1) spin forever; tf.data stops there too.
      if (!produced_in_epoch_) break;
    }
    count_ = epoch_;  // stay at the end
    *end_of_sequence = true;
    return Status::OK();
  }

 private:
  NodePtr input_;
  int64_t count_;
  IteratorContext ctx_;
  int64_t epoch_ = 0;
  IteratorPtr current_;
  bool produced_in_epoch_ = false;
};

class RepeatNode final : public DatasetNode {
 public:
  RepeatNode(NodePtr input, int64_t count) : input_(std::move(input)), count_(count) {}

  StatusOr<IteratorPtr> MakeIterator(const IteratorContext& ctx) const override {
    return IteratorPtr(std::make_unique<RepeatIterator>(input_, count_, ctx));
  }

  Status ToDef(proto::DatasetDef* def) const override {
    proto::RepeatDatasetDef* repeat = def->mutable_repeat();
    repeat->set_count(count_);
    return input_->ToDef(repeat->mutable_input());
  }

 private:
  NodePtr input_;
  int64_t count_;
};

// ---- Map --------------------------------------------------------------------------------------

class MapIterator final : public Iterator {
 public:
  MapIterator(IteratorPtr input, std::shared_ptr<const Dataset::MapFn> fn)
      : input_(std::move(input)), fn_(std::move(fn)) {}

  Status GetNext(Element* element, bool* end_of_sequence) override {
    Element next;
    WEFT_RETURN_IF_ERROR(input_->GetNext(&next, end_of_sequence));
    if (*end_of_sequence) return Status::OK();
    const int64_t position = position_++;
    StatusOr<Element> mapped = (*fn_)(std::move(next));
    if (!mapped.ok()) {
      return mapped.status().WithContext(StrCat("Map function on element ", position));
    }
    *element = std::move(mapped).value();
    return Status::OK();
  }

 private:
  IteratorPtr input_;
  std::shared_ptr<const Dataset::MapFn> fn_;
  int64_t position_ = 0;
};

// ---- Shard and Take ---------------------------------------------------------------------------

// Input errors are passed on whichever shard's position they fall on: a shard cannot tell
// whose element a failed read would have been.
class ShardIterator final : public Iterator {
 public:
  ShardIterator(IteratorPtr input, int64_t num_shards, int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}

  Status GetNext(Element* element, bool* end_of_sequence) override {
    while (true) {
      WEFT_RETURN_IF_ERROR(input_->GetNext(element, end_of_sequence));
      if (*end_of_sequence) return Status::OK();
      const int64_t position = position_++;
      if (position % num_shards_ == index_) return Status::OK();
    }
  }

 private:
  IteratorPtr input_;
  int64_t num_shards_;
  int64_t index_;
  int64_t position_ = 0;
};

class TakeIterator final : public Iterator {
 public:
  TakeIterator(IteratorPtr input, int64_t count) : input_(std::move(input)), left_(count) {}

  Status GetNext(Element* element, bool* end_of_sequence) override {
    if (left_ == 0) {
      *end_of_sequence = true;
      return Status::OK();
    }
    WEFT_RETURN_IF_ERROR(input_->GetNext(element, end_of_sequence));
    if (!*end_of_sequence && left_ > 0) --left_;
    return Status::OK();
  }

 private:
  IteratorPtr input_;
  int64_t left_;  // -1: no limit
};

}  // namespace

NodePtr MakeShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed) {
  return std::make_shared<ShuffleNode>(std::move(input), buffer_size, seed);
}
NodePtr MakeBatchNode(NodePtr input, int64_t batch_size, bool drop_remainder) {
  auto describe = [=](proto::DatasetDef* def) -> StatusOr<proto::DatasetDef*> {
    proto::BatchDatasetDef* batch = def->mutable_batch();
    batch->set_batch_size(batch_size);
    batch->set_drop_remainder(drop_remainder);
    return batch->mutable_input();
  };
  return MakeTransformationNode<BatchIterator>(std::move(input), describe, batch_size,
                                               drop_remainder);
}
NodePtr MakeRepeatNode(NodePtr input, int64_t count) {
  return std::make_shared<RepeatNode>(std::move(input), count);
}
NodePtr MakeMapNode(NodePtr input, Dataset::MapFn fn) {
  auto describe = [](proto::DatasetDef*) -> StatusOr<proto::DatasetDef*> {
    return Unimplemented(
        "the pipeline has a Map of a C++ function, which has no description another process "
        "could rebuild (build the dataset there, or map inside the model)");
  };
  return MakeTransformationNode<MapIterator>(std::move(input), describe,
                                             std::make_shared<const Dataset::MapFn>(std::move(fn)));
}
NodePtr MakeShardNode(NodePtr input, int64_t num_shards, int64_t index) {
  auto describe = [=](proto::DatasetDef* def) -> StatusOr<proto::DatasetDef*> {
    proto::ShardDatasetDef* shard = def->mutable_shard();
    shard->set_num_shards(num_shards);
    shard->set_index(index);
    return shard->mutable_input();
  };
  return MakeTransformationNode<ShardIterator>(std::move(input), describe, num_shards, index);
}
NodePtr MakeTakeNode(NodePtr input, int64_t count) {
  auto describe = [=](proto::DatasetDef* def) -> StatusOr<proto::DatasetDef*> {
    proto::TakeDatasetDef* take = def->mutable_take();
    take->set_count(count);
    return take->mutable_input();
  };
  return MakeTransformationNode<TakeIterator>(std::move(input), describe, count);
}

}  // namespace weft::data
