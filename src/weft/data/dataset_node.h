// Internal to the data layer: the immutable nodes behind Dataset handles, and one factory per
// node kind. Nodes are created with validated arguments and never change, so any thread may make
// iterators from them; each iterator belongs to one consumer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "weft/data/dataset.h"
#include "weft/dataset.pb.h"

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
  // Writes this node, and through it its inputs, into `def` (Dataset::ToDef); Unimplemented naming
  // the node when it has no description (a Map of a C++ function).
  virtual Status ToDef(proto::DatasetDef* def) const = 0;
};

using NodePtr = std::shared_ptr<const DatasetNode>;

// Fills a transformation's own fields of `def` and returns where its input's description goes.
using DescribeFn = std::function<StatusOr<proto::DatasetDef*>(proto::DatasetDef* def)>;

// The node of a transformation whose iterator is IteratorT(iterator of the input, args...): it
// keeps the input and the arguments, and passes the context on to the input.
template <typename IteratorT, typename... Args>
class TransformationNode final : public DatasetNode {
 public:
  TransformationNode(NodePtr input, DescribeFn describe, Args... args)
      : input_(std::move(input)), describe_(std::move(describe)), args_(std::move(args)...) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorContext& ctx) const override {
    WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> input, input_->MakeIterator(ctx));
    return std::apply(
        [&input](const Args&... args) -> std::unique_ptr<Iterator> {
          return std::make_unique<IteratorT>(std::move(input), args...);
        },
        args_);
  }

  Status ToDef(proto::DatasetDef* def) const override {
    WEFT_ASSIGN_OR_RETURN(proto::DatasetDef * input, describe_(def));
    return input_->ToDef(input);
  }

 private:
  NodePtr input_;
  DescribeFn describe_;
  std::tuple<Args...> args_;
};

template <typename IteratorT, typename... Args>
NodePtr MakeTransformationNode(NodePtr input, DescribeFn describe, Args... args) {
  return std::make_shared<TransformationNode<IteratorT, Args...>>(
      std::move(input), std::move(describe), std::move(args)...);
}

// A node that iterates as `inner` and describes itself as `def`: a source built out of other
// nodes (IDX files read into tensors, synthetic Criteo batches made by a Map) that another process
// rebuilds from its own arguments rather than from those nodes.
NodePtr MakeDescribedNode(NodePtr inner, proto::DatasetDef def);
// `dataset` iterating as it does, described as `def` (through MakeDescribedNode); a dataset
// carrying an error is returned as it is.
Dataset DescribedAs(const Dataset& dataset, proto::DatasetDef def);

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
