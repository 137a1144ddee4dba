// VariableSnapshot (see the header).
#include "weft/train/variable_snapshot.h"

#include <algorithm>
#include <utility>

#include "weft/core/str_util.h"
#include "weft/framework/device_name_utils.h"
#include "weft/graph/builder/ops.h"

namespace weft::train {
namespace {

// "/job:ps/replica:0/task:1" of a device name; the name itself when it names no task.
std::string TaskOf(const std::string& device) {
  StatusOr<ParsedDeviceName> parsed = ParseDeviceName(device);
  if (!parsed.ok() || !parsed->has_job || !parsed->has_task) return device;
  return StrCat("/job:", parsed->job, "/replica:", parsed->replica, "/task:", parsed->task);
}

}  // namespace

StatusOr<std::unique_ptr<VariableSnapshot>> VariableSnapshot::Create(
    const Scope& scope,
    const std::vector<std::shared_ptr<distribute::DistributedVariable>>& variables) {
  std::vector<Component> components;
  for (const auto& variable : variables) {
    for (int i = 0; i < variable->num_components(); ++i) {
      const Variable& component = variable->component(i);
      const std::string& device = variable->devices()[static_cast<size_t>(i)];
      const Scope on = scope.NewSubScope(component.name()).WithDevice(device);
      Output value = ops::Placeholder(on.WithOpName("value"), component.dtype(),
                                      PartialShape(component.shape()));
      components.push_back({TaskOf(device), component.Read(on).name(), value.name(),
                            component.Assign(on, value).name()});
    }
  }
  WEFT_RETURN_IF_ERROR(scope.status());
  std::unique_ptr<VariableSnapshot> snapshot(new VariableSnapshot(std::move(components)));
  for (const Component& component : snapshot->components_) {
    snapshot->reads_.push_back(component.read);
  }
  return snapshot;
}

Status VariableSnapshot::Take(Session& session, int64_t step) {
  std::vector<Tensor> values;
  WEFT_RETURN_IF_ERROR(session.Run({}, reads_, {}, &values)
                           .WithContext(StrCat("the variables' snapshot at step ", step)));
  MutexLock lock(mu_);
  values_ = std::move(values);
  step_ = step;
  return Status::OK();
}

StatusOr<int> VariableSnapshot::Restore(Session& session,
                                        const std::vector<std::string>& tasks) const {
  NamedTensorList feeds;
  std::vector<std::string> assigns;
  {
    MutexLock lock(mu_);
    if (step_ < 0) {
      return FailedPrecondition("no snapshot of the variables was taken to restore ",
                                StrJoin(tasks, ", "), " from");
    }
    for (size_t c = 0; c < components_.size(); ++c) {
      const Component& component = components_[c];
      if (std::find(tasks.begin(), tasks.end(), component.task) == tasks.end()) continue;
      feeds.emplace_back(component.value, values_[c]);
      assigns.push_back(component.assign);
    }
  }
  if (assigns.empty()) return 0;
  std::vector<Tensor> outputs;
  WEFT_RETURN_IF_ERROR(
      session.Run(feeds, {}, assigns, &outputs)
          .WithContext(StrCat("restoring the variables of ", StrJoin(tasks, ", "))));
  return static_cast<int>(assigns.size());
}

int64_t VariableSnapshot::step() const {
  MutexLock lock(mu_);
  return step_;
}

int64_t VariableSnapshot::bytes() const {
  MutexLock lock(mu_);
  int64_t total = 0;
  for (const Tensor& value : values_) total += static_cast<int64_t>(value.TotalBytes());
  return total;
}

}  // namespace weft::train
