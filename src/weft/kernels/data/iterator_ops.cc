// MakeIterator and IteratorGetNext (ops/dataset_ops.cc): a per-worker dataset's iterator lives in
// its device's ResourceMgr, one per `shared_name`, so concurrent steps on a worker take its
// elements one after the other, and a worker that restarted has none until MakeIterator runs there
// again (ClusterCoordinator rebuilds it before the worker takes functions).
#include <memory>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/data/dataset.h"
#include "weft/dataset.pb.h"
#include "weft/framework/device_base.h"
#include "weft/framework/kernel_registry.h"
#include "weft/framework/node_def_util.h"
#include "weft/framework/op_kernel.h"
#include "weft/framework/resource_mgr.h"
#include "weft/kernels/register_kernels.h"

namespace weft::kernels {
namespace {

constexpr char kIteratorContainer[] = "_weft_iterators";

// The iterator kept under one shared_name; MakeIterator replaces it. Thread-safe: GetNext calls
// are serialised.
class IteratorResource final : public ResourceBase {
 public:
  explicit IteratorResource(std::string name) : name_(std::move(name)) {}

  void Reset(std::unique_ptr<data::Iterator> iterator) WEFT_EXCLUDES(mu_) {
    std::unique_ptr<data::Iterator> old;
    {
      MutexLock lock(mu_);
      old = std::move(iterator_);
      iterator_ = std::move(iterator);
      elements_ = 0;
    }
    // `old` (a prefetching iterator joins its thread) goes here, outside the lock.
  }

  // The next element and its position in the sequence; *end_of_sequence at the end.
  Status GetNext(data::Element* element, bool* end_of_sequence, int64_t* position)
      WEFT_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    *position = elements_;
    WEFT_RETURN_IF_ERROR(iterator_->GetNext(element, end_of_sequence));
    if (!*end_of_sequence) ++elements_;
    return Status::OK();
  }

  std::string DebugString() const override {
    MutexLock lock(mu_);
    return StrCat("Iterator<", name_, ", ", elements_, " elements taken>");
  }

 private:
  const std::string name_;
  mutable Mutex mu_;
  std::unique_ptr<data::Iterator> iterator_ WEFT_GUARDED_BY(mu_);
  int64_t elements_ WEFT_GUARDED_BY(mu_) = 0;
};

class MakeIteratorOp final : public OpKernel {
 public:
  explicit MakeIteratorOp(OpKernelConstruction* context) : OpKernel(context) {
    std::string serialized;
    Status status = context->GetAttr("shared_name", &shared_name_);
    if (status.ok()) status = context->GetAttr("dataset", &serialized);
    if (status.ok() && !def_.ParseFromString(serialized)) {
      status = InvalidArgument(FormatNodeForError(context->node_def()),
                               ": its `dataset` attr is not a serialized DatasetDef");
    }
    context->SetStatus(status);
  }

  Status Compute(OpKernelContext* context) override {
    const data::Dataset dataset = data::Dataset::FromDef(def_);
    StatusOr<std::unique_ptr<data::Iterator>> iterator = dataset.MakeIterator();
    if (!iterator.ok()) {
      return iterator.status().WithContext(
          StrCat(FormatNodeForError(def()), ": dataset '", shared_name_, "'"));
    }
    WEFT_ASSIGN_OR_RETURN(
        std::shared_ptr<IteratorResource> resource,
        context->device()->resource_manager()->LookupOrCreate<IteratorResource>(
            kIteratorContainer, shared_name_, [&]() -> StatusOr<std::shared_ptr<IteratorResource>> {
              return std::make_shared<IteratorResource>(shared_name_);
            }));
    resource->Reset(std::move(iterator).value());
    return Status::OK();
  }

 private:
  std::string shared_name_;
  proto::DatasetDef def_;
};

class IteratorGetNextOp final : public OpKernel {
 public:
  explicit IteratorGetNextOp(OpKernelConstruction* context) : OpKernel(context) {
    Status status = context->GetAttr("shared_name", &shared_name_);
    if (status.ok()) status = context->GetAttr("output_types", &output_types_);
    context->SetStatus(status);
  }

  Status Compute(OpKernelContext* context) override {
    StatusOr<std::shared_ptr<IteratorResource>> resource =
        context->device()->resource_manager()->Lookup<IteratorResource>(kIteratorContainer,
                                                                        shared_name_);
    if (!resource.ok()) {
      return FailedPrecondition(FormatNodeForError(def()), ": dataset '", shared_name_,
                                "' has no iterator on this device (its MakeIterator has not run "
                                "here, or the task restarted since and lost it)");
    }
    data::Element element;
    bool end_of_sequence = false;
    int64_t position = 0;
    Status got = (*resource)->GetNext(&element, &end_of_sequence, &position);
    if (!got.ok()) {
      return got.WithContext(
          StrCat(FormatNodeForError(def()), ": dataset '", shared_name_, "', element ", position));
    }
    if (end_of_sequence) {
      return OutOfRange("End of sequence: dataset '", shared_name_, "' has no element after its ",
                        position, " (", FormatNodeForError(def()), ")");
    }
    if (element.size() != output_types_.size()) {
      return InvalidArgument(FormatNodeForError(def()), ": element ", position, " of dataset '",
                             shared_name_, "' has ", element.size(), " components, but ",
                             output_types_.size(), " output types are declared");
    }
    for (size_t i = 0; i < element.size(); ++i) {
      if (element[i].dtype() != output_types_[i]) {
        return InvalidArgument(FormatNodeForError(def()), ": component ", i, " of element ",
                               position, " of dataset '", shared_name_, "' is ",
                               DataTypeName(element[i].dtype()), ", declared ",
                               DataTypeName(output_types_[i]));
      }
      WEFT_RETURN_IF_ERROR(context->SetOutput(static_cast<int>(i), std::move(element[i])));
    }
    return Status::OK();
  }

 private:
  std::string shared_name_;
  std::vector<DataType> output_types_;
};

}  // namespace

void RegisterDataKernels(KernelRegistry& registry) {
  registry.Register<MakeIteratorOp>(KernelDef("MakeIterator", "CPU"));
  registry.Register<IteratorGetNextOp>(KernelDef("IteratorGetNext", "CPU"));
}

}  // namespace weft::kernels
