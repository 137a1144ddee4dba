// Internal to the data layer: the immutable nodes behind Dataset handles, and one factory per
// node kind. Nodes are created with validated arguments and never change, so any thread may make
// iterators from them; each iterator belongs to one consumer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "weft/data/dataset.h"

namespace weft::data {

// What a parent tells the iterator it makes: `epoch` distinguishes the passes of Repeat, so
// Shuffle can draw a fresh order per pass that still depends only on its seed.
struct IteratorContext {
  uint64_t epoch = 0;
};

class DatasetNode {
 public:
  virtual ~DatasetNode() = default;
  virtual StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorContext& ctx) const = 0;
};

using NodePtr = std::shared_ptr<const DatasetNode>;

// The node of a transformation whose iterator is IteratorT(iterator of the input, args...): it
// keeps the input and the arguments, and passes the context on to the input.
template <typename IteratorT, typename... Args>
class TransformationNode final : public DatasetNode {
 public:
  explicit TransformationNode(NodePtr input, Args... args)
      : input_(std::move(input)), args_(std::move(args)...) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> input, input_->MakeIterator(ctx));
    return std::apply(
        [&input](const Args&... args) -> std::unique_ptr<Iterator> {
          return std::make_unique<IteratorT>(std::move(input), args...);
        },
        args_);
  }

 private:
  NodePtr input_;
  std::tuple<Args...> args_;
};

template <typename IteratorT, typename... Args>
NodePtr MakeTransformationNode(NodePtr input, Args... args) {
  return std::make_shared<TransformationNode<IteratorT, Args...>>(std::move(input),
                                                                  std::move(args)...);
}

// SplitMix64's finaliser: spreads a seed so that nearby seeds give unrelated generator states.
uint64_t MixSeed(uint64_t value);

NodePtr MakeTensorSliceNode(std::vector<Tensor> components, int64_t size);
NodePtr MakeCsvNode(std::string path, CsvOptions options);
NodePtr MakeShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed);
NodePtr MakeBatchNode(NodePtr input, int64_t batch_size, bool drop_remainder);
NodePtr MakeRepeatNode(NodePtr input, int64_t count);
NodePtr MakeMapNode(NodePtr input, Dataset::MapFn fn);
NodePtr MakePrefetchNode(NodePtr input, int64_t buffer_size);
NodePtr MakeShardNode(NodePtr input, int64_t num_shards, int64_t index);
NodePtr MakeTakeNode(NodePtr input, int64_t count);

}  // namespace weft::data
