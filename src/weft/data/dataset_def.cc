// Dataset::ToDef and Dataset::FromDef: a pipeline described so that another process (a worker
// making its per-worker iterator) rebuilds the same one. FromDef goes through the public sources
// and transformations, so a def from the wire gets the checks a pipeline built in C++ gets.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/core/str_util.h"
#include "weft/data/dataset_node.h"
#include "weft/data/synthetic_criteo.h"
#include "weft/framework/tensor_proto_util.h"

namespace weft::data {
namespace {

class DescribedNode final : public DatasetNode {
 public:
  DescribedNode(NodePtr inner, proto::DatasetDef def)
      : inner_(std::move(inner)), def_(std::move(def)) {}

  StatusOr<std::unique_ptr<Iterator>> MakeIterator(const IteratorContext& ctx) const override {
    return inner_->MakeIterator(ctx);
  }
  Status ToDef(proto::DatasetDef* def) const override {
    *def = def_;
    return Status::OK();
  }

 private:
  NodePtr inner_;
  const proto::DatasetDef def_;
};

StatusOr<Dataset> TensorSlicesFromDef(const proto::TensorSlicesDatasetDef& def) {
  std::vector<Tensor> components;
  for (int i = 0; i < def.components_size(); ++i) {
    StatusOr<Tensor> component = TensorFromProto(def.components(i));
    if (!component.ok()) return component.status().WithContext(StrCat("component ", i));
    components.push_back(std::move(component).value());
  }
  return Dataset::FromTensors(std::move(components));
}

StatusOr<Dataset> CsvFileFromDef(const proto::CsvFileDatasetDef& def) {
  CsvOptions options;
  for (int c = 0; c < def.column_types_size(); ++c) {
    const int type = def.column_types(c);
    if (!IsValidDataType(type)) return InvalidArgument("column ", c + 1, ": unknown type ", type);
    options.column_types.push_back(static_cast<DataType>(type));
  }
  options.header = def.header();
  if (def.delimiter().size() != 1) {
    return InvalidArgument("the delimiter must be one character, got '", def.delimiter(), "'");
  }
  options.delimiter = def.delimiter()[0];
  for (const auto& field_default : def.defaults()) {
    options.defaults.push_back(field_default.present() ? std::optional(field_default.text())
                                                       : std::nullopt);
  }
  return Dataset::FromCsvFile(def.path(), std::move(options));
}

// SyntheticCriteoDataset holds the indices of its examples, from `first` on: a def from the wire
// may not ask for more of them than a worker should allocate, nor for indices that overflow.
constexpr int64_t kMaxSyntheticCriteoExamples = int64_t{1} << 24;
constexpr int64_t kMaxSyntheticCriteoFirst = int64_t{1} << 62;

StatusOr<Dataset> SyntheticCriteoFromDef(const proto::SyntheticCriteoDatasetDef& def) {
  if (def.count() > kMaxSyntheticCriteoExamples || def.batch_size() > kMaxSyntheticCriteoExamples) {
    return InvalidArgument("count ", def.count(), " and batch_size ", def.batch_size(),
                           " must be at most ", kMaxSyntheticCriteoExamples);
  }
  if (def.first() > kMaxSyntheticCriteoFirst) {
    return InvalidArgument("first ", def.first(), " must be at most ", kMaxSyntheticCriteoFirst);
  }
  // Each example holds num_dense floats and one id per table.
  constexpr int kMaxFeatures = 1 << 16;
  if (def.num_dense() > kMaxFeatures || def.table_rows_size() > kMaxFeatures) {
    return InvalidArgument("num_dense ", def.num_dense(), " and the ", def.table_rows_size(),
                           " tables must each be at most ", kMaxFeatures);
  }
  SyntheticCriteoOptions options;
  options.seed = def.seed();
  options.num_dense = def.num_dense();
  options.table_rows.assign(def.table_rows().begin(), def.table_rows().end());
  options.zipf_exponent = def.zipf_exponent();
  options.bias = def.bias();
  options.id_weight_scale = def.id_weight_scale();
  options.dense_weight_scale = def.dense_weight_scale();
  return SyntheticCriteoDataset(options, def.first(), def.count(), def.batch_size(),
                                def.drop_remainder());
}

// The dataset `def` describes, or the error of the first part of it that is wrong, named by its
// path from the top ("batch.input.shuffle.input.csv_file").
StatusOr<Dataset> FromDefAt(const proto::DatasetDef& def, const std::string& path) {
  using Kind = proto::DatasetDef::KindCase;
  StatusOr<Dataset> dataset = InvalidArgument("no kind of dataset is set");
  std::string at;  // the kind's field, the path's next part
  auto input = [&](const proto::DatasetDef& input_def) {
    return FromDefAt(input_def, StrCat(path, at, ".input."));
  };
  switch (def.kind_case()) {
    case Kind::kTensorSlices:
      at = "tensor_slices";
      dataset = TensorSlicesFromDef(def.tensor_slices());
      break;
    case Kind::kIdxFiles:
      at = "idx_files";
      dataset = Dataset::FromIdxFiles(def.idx_files().images_path(), def.idx_files().labels_path());
      break;
    case Kind::kCsvFile:
      at = "csv_file";
      dataset = CsvFileFromDef(def.csv_file());
      break;
    case Kind::kSyntheticCriteo:
      at = "synthetic_criteo";
      dataset = SyntheticCriteoFromDef(def.synthetic_criteo());
      break;
    case Kind::kShuffle: {
      at = "shuffle";
      WEFT_ASSIGN_OR_RETURN(Dataset in, input(def.shuffle().input()));
      dataset = in.Shuffle(def.shuffle().buffer_size(), def.shuffle().seed());
      break;
    }
    case Kind::kBatch: {
      at = "batch";
      WEFT_ASSIGN_OR_RETURN(Dataset in, input(def.batch().input()));
      dataset = in.Batch(def.batch().batch_size(), def.batch().drop_remainder());
      break;
    }
    case Kind::kRepeat: {
      at = "repeat";
      WEFT_ASSIGN_OR_RETURN(Dataset in, input(def.repeat().input()));
      dataset = in.Repeat(def.repeat().count());
      break;
    }
    case Kind::kPrefetch: {
      at = "prefetch";
      WEFT_ASSIGN_OR_RETURN(Dataset in, input(def.prefetch().input()));
      dataset = in.Prefetch(def.prefetch().buffer_size());
      break;
    }
    case Kind::kShard: {
      at = "shard";
      WEFT_ASSIGN_OR_RETURN(Dataset in, input(def.shard().input()));
      dataset = in.Shard(def.shard().num_shards(), def.shard().index());
      break;
    }
    case Kind::kTake: {
      at = "take";
      WEFT_ASSIGN_OR_RETURN(Dataset in, input(def.take().input()));
      dataset = in.Take(def.take().count());
      break;
    }
    case Kind::KIND_NOT_SET:
      break;
  }
  if (dataset.ok() && !dataset->status().ok()) dataset = dataset->status();
  if (!dataset.ok()) {
    std::string where = path + at;
    if (at.empty()) where = path.empty() ? "the top" : path.substr(0, path.size() - 1);
    return dataset.status().WithContext(StrCat("DatasetDef at ", where));
  }
  return dataset;
}

}  // namespace

NodePtr MakeDescribedNode(NodePtr inner, proto::DatasetDef def) {
  return std::make_shared<DescribedNode>(std::move(inner), std::move(def));
}

Dataset DescribedAs(const Dataset& dataset, proto::DatasetDef def) {
  if (!dataset.status_.ok()) return dataset;
  return Dataset(MakeDescribedNode(dataset.node_, std::move(def)));
}

StatusOr<proto::DatasetDef> Dataset::ToDef() const {
  WEFT_RETURN_IF_ERROR(status_);
  proto::DatasetDef def;
  WEFT_RETURN_IF_ERROR(node_->ToDef(&def));
  return def;
}

Dataset Dataset::FromDef(const proto::DatasetDef& def) {
  StatusOr<Dataset> dataset = FromDefAt(def, "");
  if (!dataset.ok()) return Dataset(dataset.status());
  return std::move(dataset).value();
}

}  // namespace weft::data
