// Collective kernels: each hands its node's part (a bucket of tensors to all-reduce, a value to
// broadcast or receive, an input to all-gather) to the step's CollectiveExecutor, which meets the
// other members of the instance (one per device); the outputs are set when it calls back.
// Asynchronous, so a member waiting for the others holds no thread. Attrs are checked when the
// kernel is built; every error names the node.
#include <memory>

#include "weft/framework/collective.h"
#include "weft/framework/node_def_util.h"
#include "weft/kernels/register_kernels.h"

namespace weft::kernels {
namespace {

// Reads the attrs that place a member in its collective (group_size, group_key, instance_key).
Status ReadGroupAttrs(OpKernelConstruction* context, CollectiveParams* params) {
  int64_t group_size = 0;
  WEFT_RETURN_IF_ERROR(context->GetAttr("group_size", &group_size));
  WEFT_RETURN_IF_ERROR(context->GetAttr("group_key", &params->group_key));
  WEFT_RETURN_IF_ERROR(context->GetAttr("instance_key", &params->instance_key));
  if (group_size < 1 || group_size > INT32_MAX) {
    return InvalidArgument(FormatNodeForError(context->node_def()),
                           ": group_size must be at least 1, got ", group_size);
  }
  params->group_size = static_cast<int32_t>(group_size);
  return Status::OK();
}

// The step's collective executor, or null after failing `context` (a collective needs one).
CollectiveExecutor* ExecutorOrFail(OpKernelContext* context, const proto::NodeDef& node) {
  CollectiveExecutor* collectives = context->collective_executor();
  if (collectives == nullptr) {
    context->SetStatus(FailedPrecondition(FormatNodeForError(node),
                                          " runs without a collective executor (a collective "
                                          "needs a step with partitions)"));
  }
  return collectives;
}

// A collective's error, naming the node unless it already does.
Status NamingNode(const Status& status, const proto::NodeDef& node) {
  const std::string name = FormatNodeForError(node);
  if (status.message().find(name) != std::string::npos) return status;
  return status.WithContext(name);
}

class CollectiveAllReduceOp final : public AsyncOpKernel {
 public:
  explicit CollectiveAllReduceOp(OpKernelConstruction* context) : AsyncOpKernel(context) {
    context->SetStatus(ReadGroupAttrs(context, &params_));
    context->SetStatus(context->GetAttr("merge_op", &params_.merge_op));
    context->SetStatus(context->GetAttr("final_op", &params_.final_op));
    if (!context->status().ok()) return;
    if (params_.merge_op != "Add") {
      context->SetStatus(InvalidArgument(FormatNodeForError(def()), ": merge_op '",
                                         params_.merge_op, "' is not supported (only 'Add')"));
    }
    if (params_.final_op != "Id" && params_.final_op != "Div") {
      context->SetStatus(InvalidArgument(FormatNodeForError(def()), ": final_op '",
                                         params_.final_op, "' is not one of 'Id', 'Div'"));
    }
  }

  void ComputeAsync(OpKernelContext* context, DoneCallback done) override {
    CollectiveExecutor* collectives = ExecutorOrFail(context, def());
    if (collectives == nullptr) {
      done();
      return;
    }
    std::vector<Tensor> inputs(context->num_inputs());
    for (int i = 0; i < context->num_inputs(); ++i) inputs[i] = context->input(i);
    auto outputs = std::make_shared<std::vector<Tensor>>();
    collectives->AllReduceAsync(
        params_, context->device(), std::move(inputs), outputs.get(),
        [this, context, outputs, done = std::move(done)](const Status& status) {
          context->SetStatus(Finish(context, status, std::move(*outputs)));
          done();
        });
  }

 private:
  // Sets the outputs from the collective's results, or returns its error naming the node.
  Status Finish(OpKernelContext* context, const Status& status, std::vector<Tensor> results) const {
    if (!status.ok()) return NamingNode(status, def());
    if (static_cast<int>(results.size()) != context->num_outputs()) {
      return Internal(FormatNodeForError(def()), ": the collective returned ", results.size(),
                      " tensors for ", context->num_outputs(), " outputs");
    }
    for (int i = 0; i < context->num_outputs(); ++i) {
      WEFT_RETURN_IF_ERROR(context->SetOutput(i, std::move(results[i])));
    }
    return Status::OK();
  }

  CollectiveParams params_;
};

// CollectiveBroadcastSend (kSource) and CollectiveBroadcastRecv: the same call to the executor,
// the sender with its input, which is also its output.
template <bool kSource>
class CollectiveBroadcastOp final : public AsyncOpKernel {
 public:
  explicit CollectiveBroadcastOp(OpKernelConstruction* context) : AsyncOpKernel(context) {
    PartialShape shape;
    context->SetStatus(ReadGroupAttrs(context, &params_));
    context->SetStatus(context->GetAttr("T", &dtype_));
    context->SetStatus(context->GetAttr("shape", &shape));
    if (!context->status().ok()) return;
    // Every member, the receivers first, must know what arrives before it arrives.
    if (!shape.IsFullyDefined()) {
      context->SetStatus(InvalidArgument(FormatNodeForError(def()), ": shape ", shape.DebugString(),
                                         " must be fully defined"));
      return;
    }
    shape_ = shape.ToTensorShape();
  }

  void ComputeAsync(OpKernelContext* context, DoneCallback done) override {
    CollectiveExecutor* collectives = ExecutorOrFail(context, def());
    if (collectives == nullptr) {
      done();
      return;
    }
    auto value = std::make_shared<Tensor>();
    if constexpr (kSource) {
      *value = context->input(0);
      if (!(value->shape() == shape_)) {
        context->SetStatus(InvalidArgument(FormatNodeForError(def()), ": input of shape ",
                                           value->shape(), " differs from the shape attr ",
                                           shape_));
        done();
        return;
      }
    }
    collectives->BroadcastAsync(
        params_, context->device(), kSource, dtype_, shape_, value.get(),
        [this, context, value, done = std::move(done)](const Status& status) {
          context->SetStatus(Finish(context, status, std::move(*value)));
          done();
        });
  }

 private:
  Status Finish(OpKernelContext* context, const Status& status, Tensor value) const {
    if (!status.ok()) return NamingNode(status, def());
    if (value.dtype() != dtype_ || !(value.shape() == shape_)) {
      return Internal(FormatNodeForError(def()), ": the broadcast delivered ",
                      DataTypeName(value.dtype()), " ", value.shape(), " instead of ",
                      DataTypeName(dtype_), " ", shape_);
    }
    return context->SetOutput(0, std::move(value));
  }

  CollectiveParams params_;
  DataType dtype_ = DataType::kInvalid;
  TensorShape shape_;
};

class CollectiveAllGatherOp final : public AsyncOpKernel {
 public:
  explicit CollectiveAllGatherOp(OpKernelConstruction* context) : AsyncOpKernel(context) {
    context->SetStatus(ReadGroupAttrs(context, &params_));
  }

  void ComputeAsync(OpKernelContext* context, DoneCallback done) override {
    CollectiveExecutor* collectives = ExecutorOrFail(context, def());
    if (collectives == nullptr) {
      done();
      return;
    }
    auto output = std::make_shared<Tensor>();
    collectives->AllGatherAsync(
        params_, context->device(), context->input(0), output.get(),
        [this, context, output, done = std::move(done)](const Status& status) {
          context->SetStatus(status.ok() ? context->SetOutput(0, std::move(*output))
                                         : NamingNode(status, def()));
          done();
        });
  }

 private:
  CollectiveParams params_;
};

}  // namespace

void RegisterCollectiveKernels(KernelRegistry& registry) {
  registry.Register<CollectiveAllReduceOp>(
      KernelDef("CollectiveAllReduce", "CPU")
          .TypeConstraint("T", {DataType::kFloat, DataType::kDouble, DataType::kBFloat16}));
  const std::vector<DataType> kTypes = {DataType::kFloat, DataType::kDouble, DataType::kInt32,
                                        DataType::kInt64};
  registry.Register<CollectiveBroadcastOp<true>>(
      KernelDef("CollectiveBroadcastSend", "CPU").TypeConstraint("T", kTypes));
  registry.Register<CollectiveBroadcastOp<false>>(
      KernelDef("CollectiveBroadcastRecv", "CPU").TypeConstraint("T", kTypes));
  registry.Register<CollectiveAllGatherOp>(
      KernelDef("CollectiveAllGather", "CPU").TypeConstraint("T", kTypes));
}

}  // namespace weft::kernels
