// CollectiveAllReduce kernel: hands the node's bucket of N tensors to the step's
// CollectiveExecutor, which meets the other members of the instance (one per device) and reduces
// them; the outputs are set when it calls back. Asynchronous, so a member waiting for the others
// holds no thread.
#include <memory>

#include "weft/framework/collective.h"
#include "weft/framework/node_def_util.h"
#include "weft/kernels/register_kernels.h"

namespace weft::kernels {
namespace {

class CollectiveAllReduceOp final : public AsyncOpKernel {
 public:
  explicit CollectiveAllReduceOp(OpKernelConstruction* context) : AsyncOpKernel(context) {
    int64_t group_size = 0;
    context->SetStatus(context->GetAttr("group_size", &group_size));
    context->SetStatus(context->GetAttr("group_key", &params_.group_key));
    context->SetStatus(context->GetAttr("instance_key", &params_.instance_key));
    context->SetStatus(context->GetAttr("merge_op", &params_.merge_op));
    context->SetStatus(context->GetAttr("final_op", &params_.final_op));
    if (!context->status().ok()) return;
    if (group_size < 1 || group_size > INT32_MAX) {
      context->SetStatus(InvalidArgument(FormatNodeForError(def()),
                                         ": group_size must be at least 1, got ", group_size));
    }
    params_.group_size = static_cast<int32_t>(group_size);
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
    CollectiveExecutor* collectives = context->collective_executor();
    if (collectives == nullptr) {
      context->SetStatus(FailedPrecondition(FormatNodeForError(def()),
                                            " runs without a collective executor (a collective "
                                            "needs a step with partitions)"));
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
    const std::string node = FormatNodeForError(def());
    if (!status.ok()) {
      if (status.message().find(node) != std::string::npos) return status;
      return status.WithContext(node);
    }
    if (static_cast<int>(results.size()) != context->num_outputs()) {
      return Internal(node, ": the collective returned ", results.size(), " tensors for ",
                      context->num_outputs(), " outputs");
    }
    for (int i = 0; i < context->num_outputs(); ++i) {
      WEFT_RETURN_IF_ERROR(context->SetOutput(i, std::move(results[i])));
    }
    return Status::OK();
  }

  CollectiveParams params_;
};

}  // namespace

void RegisterCollectiveKernels(KernelRegistry& registry) {
  registry.Register<CollectiveAllReduceOp>(
      KernelDef("CollectiveAllReduce", "CPU")
          .TypeConstraint("T", {DataType::kFloat, DataType::kDouble}));
}

}  // namespace weft::kernels
