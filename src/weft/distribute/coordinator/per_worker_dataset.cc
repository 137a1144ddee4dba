#include "weft/distribute/coordinator/per_worker_dataset.h"

#include <memory>

#include "weft/core/str_util.h"
#include "weft/dataset.pb.h"
#include "weft/graph/builder/node_builder.h"

namespace weft::distribute {
namespace {

StatusOr<data::Element> FirstElement(const data::Dataset& dataset) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<data::Iterator> iterator, dataset.MakeIterator());
  data::Element element;
  bool end_of_sequence = false;
  WEFT_RETURN_IF_ERROR(iterator->GetNext(&element, &end_of_sequence));
  if (end_of_sequence) return InvalidArgument("the dataset is empty");
  return element;
}

}  // namespace

StatusOr<PerWorkerDataset> PerWorkerDataset::Create(const Scope& scope, std::string_view name,
                                                    int num_workers,
                                                    const std::string& worker_device,
                                                    const PerWorkerDatasetFn& dataset_fn) {
  if (num_workers < 1) {
    return InvalidArgument("per-worker dataset '", name, "': needs at least one worker, got ",
                           num_workers);
  }
  if (!dataset_fn) return InvalidArgument("per-worker dataset '", name, "': no dataset function");
  PerWorkerDataset dataset;
  const Scope on_worker = scope.WithDevice(worker_device);
  dataset.name_ = on_worker.GetUniqueNameForOp(name);
  const Scope named = on_worker.NewSubScope(dataset.name_);
  for (int w = 0; w < num_workers; ++w) {
    const std::string context = StrCat("per-worker dataset '", dataset.name_, "' of worker ", w);
    const data::Dataset worker_dataset = dataset_fn(InputContext(num_workers, w));
    StatusOr<proto::DatasetDef> def = worker_dataset.ToDef();
    if (!def.ok()) return def.status().WithContext(context);
    if (w == 0) {
      StatusOr<data::Element> first = FirstElement(worker_dataset);
      if (!first.ok()) return first.status().WithContext(context);
      dataset.first_element_ = std::move(first).value();
      for (const Tensor& component : dataset.first_element_) {
        dataset.dtypes_.push_back(component.dtype());
      }
    }
    Node* make = NodeBuilder(named.WithOpName(StrCat("make_iterator_", w)), "MakeIterator")
                     .Attr("dataset", std::string_view(def->SerializeAsString()))
                     .Attr("shared_name", std::string_view(dataset.name_))
                     .Finalize();
    if (make == nullptr) return scope.status().WithContext(context);
    dataset.make_iterator_targets_.push_back(make->name());
  }
  Node* get_next = NodeBuilder(named.WithOpName("get_next"), "IteratorGetNext")
                       .Attr("shared_name", std::string_view(dataset.name_))
                       .Attr("output_types", dataset.dtypes_)
                       .Finalize();
  if (get_next == nullptr) {
    return scope.status().WithContext(StrCat("per-worker dataset '", dataset.name_, "'"));
  }
  for (size_t i = 0; i < dataset.dtypes_.size(); ++i) {
    dataset.components_.emplace_back(get_next, static_cast<int>(i));
  }
  return dataset;
}

}  // namespace weft::distribute
