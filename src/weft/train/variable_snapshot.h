// VariableSnapshot: a copy of a model's variables held in the coordinator's memory, taken every few
// steps under ParameterServerStrategy, from which a ps task that restarted (and so lost every
// variable it held) is restored without restarting the job. It adds to the graph one read per
// variable component and one assign from a fed value; Take fetches every component in one step,
// Restore assigns the components of the named tasks. In memory rather than in a checkpoint: it
// needs no shared file system and costs one read of the variables per snapshot (W1: 1 MB); a model
// whose tables outgrow the coordinator's memory resumes from its checkpoints instead.
// Thread-safe (the model's thread takes snapshots while a worker's thread restores).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/statusor.h"
#include "weft/distribute/distributed_variable.h"
#include "weft/graph/builder/scope.h"
#include "weft/runtime/session.h"

namespace weft::train {

class VariableSnapshot {
 public:
  // Builds the reads and assigns of every component of `variables` in `scope`.
  static StatusOr<std::unique_ptr<VariableSnapshot>> Create(
      const Scope& scope,
      const std::vector<std::shared_ptr<distribute::DistributedVariable>>& variables);

  // Reads every component through `session` and keeps the values as the snapshot of `step`.
  Status Take(Session& session, int64_t step) WEFT_EXCLUDES(mu_);
  // Assigns the snapshot's values to the components that live on `tasks`
  // ("/job:ps/replica:0/task:0"), through `session`; how many it restored. FailedPrecondition when
  // no snapshot was taken yet.
  StatusOr<int> Restore(Session& session, const std::vector<std::string>& tasks) const
      WEFT_EXCLUDES(mu_);
  // The step of the snapshot held (-1: none yet) and its size.
  int64_t step() const WEFT_EXCLUDES(mu_);
  int64_t bytes() const WEFT_EXCLUDES(mu_);

 private:
  struct Component {
    std::string task;  // where it lives
    std::string read;
    std::string value;  // the placeholder Restore feeds
    std::string assign;
  };
  explicit VariableSnapshot(std::vector<Component> components)
      : components_(std::move(components)) {}

  const std::vector<Component> components_;
  std::vector<std::string> reads_;  // every component's, in order
  mutable Mutex mu_;
  std::vector<Tensor> values_ WEFT_GUARDED_BY(mu_);
  int64_t step_ WEFT_GUARDED_BY(mu_) = -1;
};

}  // namespace weft::train
