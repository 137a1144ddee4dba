// Model's SaveWeights and LoadWeights: the layers' variables through a Checkpoint of their own
// (weft/checkpoint), built into the model's graph on first use.
#include <map>

#include "weft/core/str_util.h"
#include "weft/io/checkpoint_manifest.h"
#include "weft/train/model.h"
#include "weft/train/model_graph.h"

namespace weft::train {

StatusOr<checkpoint::Checkpoint*> Model::WeightsCheckpoint() {
  if (weights_checkpoint_ != nullptr) return weights_checkpoint_.get();
  // The distributed variables behind the layers' (replica 0's) variables, in the layers' order.
  std::map<std::string, std::shared_ptr<distribute::DistributedVariable>> by_name;
  for (const auto& variable : graph_->variables) {
    by_name[variable->ReplicaComponent(0).name()] = variable;
  }
  checkpoint::CheckpointObjects objects;
  objects.replicas = strategy_->num_replicas_in_sync();
  for (const Variable& variable : LayerVariables(/*trainable_only=*/false)) {
    auto found = by_name.find(variable.name());
    if (found == by_name.end()) {
      return Internal("model '", name_, "': the layers' variable '", variable.name(),
                      "' is not one of the model's");
    }
    objects.distributed_variables.push_back(found->second);
  }
  std::unique_ptr<checkpoint::Checkpoint> made;
  WEFT_RETURN_IF_ERROR(AddToGraph([&](const Scope& root) -> Status {
    WEFT_ASSIGN_OR_RETURN(made,
                          checkpoint::Checkpoint::Create(root.NewSubScope("weights"), objects));
    return Status::OK();
  }));
  weights_checkpoint_ = std::move(made);
  return weights_checkpoint_.get();
}

Status Model::SaveWeights(const std::string& path) {
  if (graph_ == nullptr || session_ == nullptr) {
    return FailedPrecondition("SaveWeights: model '", name_,
                              "' is not built yet: call Build, Fit, Evaluate or Predict first");
  }
  WEFT_ASSIGN_OR_RETURN(checkpoint::Checkpoint * weights, WeightsCheckpoint());
  if (!strategy_->extended().ShouldCheckpoint()) return Status::OK();
  return weights->Save(*session_, path, position_.global_step, {})
      .WithContext(StrCat("SaveWeights of model '", name_, "'"));
}

Status Model::LoadWeights(const std::string& path) {
  // The file is checked now, so that a wrong path fails here rather than at the first Predict.
  StatusOr<io::CheckpointManifest> manifest = io::CheckpointManifest::Read(path);
  if (!manifest.ok()) {
    return manifest.status().WithContext(StrCat("LoadWeights of model '", name_, "'"));
  }
  if (graph_ == nullptr || session_ == nullptr || !graph_->has_inference) {
    pending_weights_ = path;
    return Status::OK();
  }
  return RestoreWeights(path);
}

Status Model::RestoreWeights(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(checkpoint::Checkpoint * weights, WeightsCheckpoint());
  StatusOr<checkpoint::RestoredCheckpoint> restored = weights->Restore(*session_, path);
  return restored.status().WithContext(StrCat("LoadWeights of model '", name_, "'"));
}

Status Model::LoadPendingWeights() {
  if (!pending_weights_.has_value()) return Status::OK();
  WEFT_RETURN_IF_ERROR(RestoreWeights(*pending_weights_));
  pending_weights_.reset();
  return Status::OK();
}

}  // namespace weft::train
