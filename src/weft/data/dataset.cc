// Dataset handles: argument checks (recorded as the dataset's status, never aborting), the
// tensor-slice source and the IDX source built on it.
#include "weft/data/dataset.h"

#include <utility>

#include "weft/core/str_util.h"
#include "weft/data/dataset_node.h"
#include "weft/data/idx.h"
#include "weft/framework/tensor_proto_util.h"

namespace weft::data {
namespace {

class TensorSliceIterator final : public Iterator {
 public:
  TensorSliceIterator(std::shared_ptr<const std::vector<Tensor>> components, int64_t size)
      : components_(std::move(components)), size_(size) {}

  Status GetNext(Element* element, bool* end_of_sequence) override {
    *end_of_sequence = next_ >= size_;
    if (*end_of_sequence) return Status::OK();
    element->clear();
    for (const Tensor& component : *components_) {
      std::vector<int64_t> dims = component.shape().dim_sizes();
      dims.erase(dims.begin());
      element->push_back(component.Slice(next_, next_ + 1).Reshaped(TensorShape(std::move(dims))));
    }
    ++next_;
    return Status::OK();
  }

 private:
  std::shared_ptr<const std::vector<Tensor>> components_;
  int64_t size_;
  int64_t next_ = 0;
};

class TensorSliceNode final : public DatasetNode {
 public:
  TensorSliceNode(std::vector<Tensor> components, int64_t size)
      : components_(std::make_shared<const std::vector<Tensor>>(std::move(components))),
        size_(size) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorContext&) const override {
    return std::unique_ptr<Iterator>(std::make_unique<TensorSliceIterator>(components_, size_));
  }

  Status ToDef(proto::DatasetDef* def) const override {
    proto::TensorSlicesDatasetDef* slices = def->mutable_tensor_slices();
    for (const Tensor& component : *components_) *slices->add_components() = ToProto(component);
    return Status::OK();
  }

 private:
  // Shared with the iterators, which may outlive the node.
  std::shared_ptr<const std::vector<Tensor>> components_;
  int64_t size_;
};

}  // namespace

uint64_t MixSeed(uint64_t value) {
  value += 0x9e3779b97f4a7c15ULL;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

NodePtr MakeTensorSliceNode(std::vector<Tensor> components, int64_t size) {
  return std::make_shared<TensorSliceNode>(std::move(components), size);
}

Dataset Dataset::FromTensors(std::vector<Tensor> components) {
  if (components.empty()) return Dataset(InvalidArgument("FromTensors: no components"));
  for (size_t i = 0; i < components.size(); ++i) {
    const Tensor& component = components[i];
    if (!component.IsInitialized() || component.dims() < 1) {
      return Dataset(InvalidArgument("FromTensors: component ", i, " has shape ", component.shape(),
                                     "; slicing needs rank >= 1"));
    }
    if (component.dim_size(0) != components[0].dim_size(0)) {
      return Dataset(InvalidArgument("FromTensors: component ", i, " has ", component.dim_size(0),
                                     " rows along dimension 0 but component 0 has ",
                                     components[0].dim_size(0)));
    }
  }
  const int64_t size = components[0].dim_size(0);
  return Dataset(MakeTensorSliceNode(std::move(components), size));
}

Dataset Dataset::FromIdxFiles(const std::string& images_path, const std::string& labels_path) {
  StatusOr<IdxExamples> examples = ReadIdxExamples(images_path, labels_path);
  if (!examples.ok()) return Dataset(examples.status());
  return FromIdxExamples(*examples);
}

Dataset Dataset::FromIdxExamples(const IdxExamples& examples) {
  proto::DatasetDef def;
  def.mutable_idx_files()->set_images_path(examples.images_path);
  def.mutable_idx_files()->set_labels_path(examples.labels_path);
  return DescribedAs(FromTensors({examples.images, examples.labels}), std::move(def));
}

Dataset Dataset::FromCsvFile(std::string path, CsvOptions options) {
  Status valid = ValidateCsvOptions(options);
  if (!valid.ok()) return Dataset(valid.WithContext(StrCat("FromCsvFile '", path, "'")));
  return Dataset(MakeCsvNode(std::move(path), std::move(options)));
}

Dataset Dataset::Shuffle(int64_t buffer_size, uint64_t seed) const {
  if (!status_.ok()) return *this;
  if (buffer_size <= 0) {
    return Dataset(InvalidArgument("Shuffle: buffer_size must be positive, got ", buffer_size));
  }
  return Dataset(MakeShuffleNode(node_, buffer_size, seed));
}

Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  if (!status_.ok()) return *this;
  if (batch_size <= 0) {
    return Dataset(InvalidArgument("Batch: batch_size must be positive, got ", batch_size));
  }
  return Dataset(MakeBatchNode(node_, batch_size, drop_remainder));
}

Dataset Dataset::Repeat(int64_t count) const {
  if (!status_.ok()) return *this;
  if (count < -1) {
    return Dataset(InvalidArgument("Repeat: count must be -1 (forever) or >= 0, got ", count));
  }
  return Dataset(MakeRepeatNode(node_, count));
}

Dataset Dataset::Map(MapFn fn) const {
  if (!status_.ok()) return *this;
  if (!fn) return Dataset(InvalidArgument("Map: the function is empty"));
  return Dataset(MakeMapNode(node_, std::move(fn)));
}

Dataset Dataset::Prefetch(int64_t buffer_size) const {
  if (!status_.ok()) return *this;
  if (buffer_size <= 0) {
    return Dataset(InvalidArgument("Prefetch: buffer_size must be positive, got ", buffer_size));
  }
  return Dataset(MakePrefetchNode(node_, buffer_size));
}

Dataset Dataset::Shard(int64_t num_shards, int64_t index) const {
  if (!status_.ok()) return *this;
  if (num_shards <= 0) {
    return Dataset(InvalidArgument("Shard: num_shards must be positive, got ", num_shards));
  }
  if (index < 0 || index >= num_shards) {
    return Dataset(InvalidArgument("Shard: index ", index, " is outside [0, ", num_shards, ")"));
  }
  return Dataset(MakeShardNode(node_, num_shards, index));
}

Dataset Dataset::Take(int64_t count) const {
  if (!status_.ok()) return *this;
  if (count < -1) {
    return Dataset(InvalidArgument("Take: count must be -1 (all) or >= 0, got ", count));
  }
  return Dataset(MakeTakeNode(node_, count));
}

StatusOr<std::unique_ptr<Iterator>> Dataset::MakeIterator() const { return MakeIterator(0); }

StatusOr<std::unique_ptr<Iterator>> Dataset::MakeIterator(uint64_t epoch) const {
  if (!status_.ok()) return status_;
  return node_->MakeIterator(IteratorContext{epoch});
}

}  // namespace weft::data
