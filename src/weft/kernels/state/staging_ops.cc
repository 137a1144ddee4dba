// _StageTensors, _UnstageTensors and _DiscardStagedTensors: a step's update inputs held on their
// device between the step that computed them and the coordinator's commit (see
// distribute/staged_updates.h). The values live in a StagingArea in the device's ResourceMgr, one
// per `stage` attr, keyed by commit id; the tensors are kept by reference (values are immutable),
// so staging copies nothing.
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/logging.h"
#include "weft/core/mutex.h"
#include "weft/framework/device_base.h"
#include "weft/framework/node_def_util.h"
#include "weft/framework/resource_mgr.h"
#include "weft/kernels/state/state_kernels.h"

namespace weft::kernels::state {
namespace {

// The values one stage holds, by commit id. A commit id whose step failed is dropped by
// _DiscardStagedTensors; the cap below bounds what a coordinator that died between a step and its
// commit (or its discard) leaves behind. Thread-safe.
class StagingArea final : public ResourceBase {
 public:
  // Far more than the steps a coordinator keeps in flight (two per worker).
  static constexpr size_t kMaxStagedCommits = 4096;

  explicit StagingArea(std::string stage) : stage_(std::move(stage)) {}

  void Stage(int64_t commit_id, std::vector<Tensor> values) WEFT_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    auto [it, inserted] = staged_.insert_or_assign(commit_id, std::move(values));
    if (!inserted) return;
    // Ids already taken or dropped leave the front, so the order stays as short as what is staged
    // (commits arrive roughly in the order their steps staged).
    while (!order_.empty() && staged_.count(order_.front()) == 0) order_.pop_front();
    order_.push_back(commit_id);
    while (staged_.size() > kMaxStagedCommits && !order_.empty()) {
      const int64_t oldest = order_.front();
      order_.pop_front();
      if (staged_.erase(oldest) > 0) {
        WEFT_LOG(WARNING) << "stage '" << stage_ << "' holds more than " << kMaxStagedCommits
                          << " uncommitted steps: dropped the values of commit " << oldest;
      }
    }
  }

  // The values of `commit_id`, removed; nullopt when none are staged.
  std::optional<std::vector<Tensor>> Take(int64_t commit_id) WEFT_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    auto it = staged_.find(commit_id);
    if (it == staged_.end()) return std::nullopt;
    std::vector<Tensor> values = std::move(it->second);
    staged_.erase(it);
    return values;
  }

  void Discard(int64_t commit_id) WEFT_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    staged_.erase(commit_id);
  }

  std::string DebugString() const override {
    MutexLock lock(mu_);
    return StrCat("StagingArea<", stage_, ", ", staged_.size(), " commits>");
  }

 private:
  const std::string stage_;
  mutable Mutex mu_;
  std::map<int64_t, std::vector<Tensor>> staged_ WEFT_GUARDED_BY(mu_);
  // Commit ids in the order first staged; ids taken since leave when they reach the front.
  std::deque<int64_t> order_ WEFT_GUARDED_BY(mu_);
};

constexpr char kStagingContainer[] = "_weft_staging";

// Reads the `stage` attr; the kernels find their StagingArea by it.
class StagingOpBase : public OpKernel {
 public:
  explicit StagingOpBase(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("stage", &stage_));
  }

 protected:
  StatusOr<std::shared_ptr<StagingArea>> Area(OpKernelContext* context) const {
    return context->device()->resource_manager()->LookupOrCreate<StagingArea>(
        kStagingContainer, stage_, [&]() -> StatusOr<std::shared_ptr<StagingArea>> {
          return std::make_shared<StagingArea>(stage_);
        });
  }
  static int64_t CommitId(OpKernelContext* context) { return *context->input(0).data<int64_t>(); }

  std::string stage_;
};

class StageTensorsOp final : public StagingOpBase {
 public:
  using StagingOpBase::StagingOpBase;

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<StagingArea> area, Area(context));
    std::vector<Tensor> values;
    for (int i = 1; i < context->num_inputs(); ++i) values.push_back(context->input(i));
    area->Stage(CommitId(context), std::move(values));
    return Status::OK();
  }
};

class UnstageTensorsOp final : public StagingOpBase {
 public:
  explicit UnstageTensorsOp(OpKernelConstruction* context) : StagingOpBase(context) {
    context->SetStatus(context->GetAttr("dtypes", &dtypes_));
  }

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<StagingArea> area, Area(context));
    const int64_t commit_id = CommitId(context);
    std::optional<std::vector<Tensor>> values = area->Take(commit_id);
    if (!values.has_value()) {
      return NotFound(FormatNodeForError(def()), ": nothing is staged for commit ", commit_id,
                      " in stage '", stage_,
                      "' (its step never staged here, or it was committed or discarded already)");
    }
    if (values->size() != dtypes_.size()) {
      return InvalidArgument(FormatNodeForError(def()), ": commit ", commit_id, " staged ",
                             values->size(), " values, but this op takes ", dtypes_.size());
    }
    for (size_t i = 0; i < values->size(); ++i) {
      if ((*values)[i].dtype() != dtypes_[i]) {
        return InvalidArgument(FormatNodeForError(def()), ": value ", i, " of commit ", commit_id,
                               " is ", DataTypeName((*values)[i].dtype()), ", expected ",
                               DataTypeName(dtypes_[i]));
      }
      WEFT_RETURN_IF_ERROR(context->SetOutput(static_cast<int>(i), std::move((*values)[i])));
    }
    return Status::OK();
  }

 private:
  std::vector<DataType> dtypes_;
};

class DiscardStagedTensorsOp final : public StagingOpBase {
 public:
  using StagingOpBase::StagingOpBase;

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<StagingArea> area, Area(context));
    area->Discard(CommitId(context));
    return Status::OK();
  }
};

}  // namespace

void RegisterStagingKernels(KernelRegistry& registry) {
  registry.Register<StageTensorsOp>(KernelDef("_StageTensors", "CPU"));
  registry.Register<UnstageTensorsOp>(KernelDef("_UnstageTensors", "CPU"));
  registry.Register<DiscardStagedTensorsOp>(KernelDef("_DiscardStagedTensors", "CPU"));
}

}  // namespace weft::kernels::state
