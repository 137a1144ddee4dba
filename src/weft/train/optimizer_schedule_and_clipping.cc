// The parts of Optimizer (optimizer.h) that every optimizer shares beyond its update: following a
// learning-rate schedule from the "iterations" counter, and clipping the gradients of a step by
// their global norm.
#include <cmath>
#include <map>
#include <utility>

#include "weft/core/str_util.h"
#include "weft/distribute/distributed_variable.h"
#include "weft/train/gradient_clipping.h"
#include "weft/train/optimizer.h"

namespace weft::train {

double Optimizer::learning_rate() const {
  return schedule_ != nullptr ? schedule_->ValueAt(0) : learning_rate_;
}

Status Optimizer::CheckNotApplied(std::string_view what) const {
  if (!applied_) return Status::OK();
  return FailedPrecondition("optimizer ", name(), ": ", what,
                            " must be set before ApplyGradients builds a step with it");
}

Status Optimizer::SetLearningRateSchedule(std::shared_ptr<const LearningRateSchedule> schedule) {
  if (schedule == nullptr) {
    return InvalidArgument("optimizer ", name(), ": the learning-rate schedule is null");
  }
  WEFT_RETURN_IF_ERROR(CheckNotApplied("the learning-rate schedule"));
  schedule_ = std::move(schedule);
  return Status::OK();
}

Status Optimizer::SetGlobalClipNorm(double clip_norm) {
  if (!(std::isfinite(clip_norm) && clip_norm > 0)) {
    return InvalidArgument("optimizer ", name(), ": clip_norm must be finite and positive, got ",
                           clip_norm);
  }
  WEFT_RETURN_IF_ERROR(CheckNotApplied("the global clip norm"));
  global_clip_norm_ = clip_norm;
  return Status::OK();
}

std::string Optimizer::VariableName(const Variable& variable) const {
  return placement_.has_value() ? placement_->variable->name() : variable.name();
}

Output Optimizer::ScheduledRate(const Scope& scope, const Variable& iterations,
                                DataType dtype) const {
  const Scope s = scope.NewSubScope("learning_rate");
  const Output rate = schedule_->Build(s, iterations.Read(s));
  return dtype == DataType::kDouble ? rate : ops::Cast(s, rate, dtype);
}

void Optimizer::AdvanceIterations(const Scope& scope, const Variable* iterations,
                                  const std::vector<Output>& updates,
                                  std::vector<Output>* ops) const {
  if (schedule_ == nullptr || iterations == nullptr || !*iterations) return;
  const Scope after = scope.WithControlDependencies(updates);
  ops->push_back(iterations->AssignAdd(after, int64_t{1}));
}

StatusOr<std::vector<distribute::Mirrored>> Optimizer::ClipReduced(
    const Scope& cross_replica_scope, const std::vector<distribute::Mirrored>& reduced) const {
  // The copies each device holds, as (gradient, copy), devices in order of first appearance.
  std::vector<std::string> devices;
  std::map<std::string, std::vector<std::pair<size_t, int>>> held;
  for (size_t g = 0; g < reduced.size(); ++g) {
    for (int i = 0; i < reduced[g].num_replicas(); ++i) {
      const std::string device = distribute::CanonicalDevice(reduced[g].device(i));
      if (!held.contains(device)) devices.push_back(device);
      held[device].emplace_back(g, i);
    }
  }
  const Scope clip = cross_replica_scope.NewSubScope("clip_by_global_norm");
  // Every device that holds every gradient computes the scale from its own copies; a device that
  // holds only some takes the first such device's scale (no strategy places gradients so today).
  std::map<std::string, Output> scale_on;
  Output first_scale;
  for (const std::string& device : devices) {
    if (held[device].size() != reduced.size()) continue;
    const Scope here = clip.WithDevice(device);
    std::vector<Output> values;
    for (const auto& [g, i] : held[device]) values.push_back(reduced[g].value(i));
    scale_on[device] = ClipScale(here, GlobalNorm(here, values), *global_clip_norm_);
    if (!first_scale) first_scale = scale_on[device];
  }
  if (!first_scale) {
    return Unimplemented("optimizer ", name(),
                         ": clipping by global norm needs a device that holds every gradient of "
                         "the step, and none does");
  }
  std::vector<std::vector<Output>> clipped(reduced.size());
  for (size_t g = 0; g < reduced.size(); ++g) clipped[g].resize(reduced[g].num_replicas());
  for (const std::string& device : devices) {
    auto own = scale_on.find(device);
    const Output& scale = own != scale_on.end() ? own->second : first_scale;
    std::vector<Output> values;
    for (const auto& [g, i] : held[device]) values.push_back(reduced[g].value(i));
    std::vector<Output> scaled = ScaleValues(clip.WithDevice(device), values, scale);
    for (size_t k = 0; k < scaled.size(); ++k) {
      const auto& [g, i] = held[device][k];
      clipped[g][i] = scaled[k];
    }
  }
  WEFT_RETURN_IF_ERROR(clip.status());
  std::vector<distribute::Mirrored> result;
  for (size_t g = 0; g < reduced.size(); ++g) {
    result.emplace_back(std::move(clipped[g]), reduced[g].devices());
  }
  return result;
}

}  // namespace weft::train
