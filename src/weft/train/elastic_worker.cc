// ElasticWorker (see the header): joining, watching, keeping and restoring the state.
#include "weft/train/elastic_worker.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>

#include <unistd.h>

#include "weft/checkpoint/checkpoint_index.h"
#include "weft/core/str_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/io/durable_file.h"
#include "weft/train/memory_snapshot.h"
#include "weft/train/model.h"

namespace weft::train {
namespace {

using Clock = std::chrono::steady_clock;

// How long one watch waits in the membership before it is asked again (it returns at once on a
// change; StopWatching interrupts it).
constexpr std::chrono::milliseconds kWatchSlice{2000};
// How long a join may wait for its generation: the membership's own deadlines (a hung member's
// eviction, --min-workers) end it sooner with their errors.
constexpr std::chrono::minutes kJoinTimeout{30};
// Generations in a row that may fail with no member lost and no step gained before the error is
// taken to be the job's own (a bad input fails every generation alike).
constexpr int kMaxFruitlessGenerations = 3;

int64_t UnixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool MayBeMembership(const Status& status) {
  return IsUnavailable(status) || IsAborted(status) || IsDeadlineExceeded(status) ||
         IsCancelled(status);
}

}  // namespace

ElasticWorker::ElasticWorker(ElasticWorkerOptions options)
    : options_(std::move(options)), client_(options_.membership) {}

ElasticWorker::~ElasticWorker() { StopWatching(); }

void ElasticWorker::LoadMemorySnapshot() {
  if (options_.snapshot_directory.empty()) return;
  StatusOr<std::optional<MemorySnapshot>> found = ReadMemorySnapshot(options_.snapshot_directory);
  if (!found.ok()) {
    Say(StrCat("elastic: leaving aside the memory snapshot: ", found.status().ToString()));
    return;
  }
  if (!found->has_value()) return;
  const int64_t step = (*found)->position.global_step;
  StatusOr<std::optional<checkpoint::CheckpointIndex>> index =
      options_.checkpoint_directory.empty()
          ? StatusOr<std::optional<checkpoint::CheckpointIndex>>(std::nullopt)
          : checkpoint::ReadCheckpointIndex(options_.checkpoint_directory);
  if (index.ok() && index->has_value() && (*index)->latest.rfind("ckpt-", 0) == 0 &&
      std::atoll((*index)->latest.c_str() + 5) >= step) {
    Say(StrCat("elastic: the checkpoint ", (*index)->latest, " is as new as the memory snapshot ",
               "of step ", step, "; resuming from the checkpoint"));
    return;
  }
  state_ = std::move((*found)->state);
  position_ = (*found)->position;
  has_state_ = true;
  Say(StrCat("elastic: found the state of step ", step, " in memory at ",
             options_.snapshot_directory));
}

Status ElasticWorker::ReadState(Model& model, std::map<std::string, Tensor>* state) const {
  std::vector<std::string> reads;
  for (const StateNodes& node : nodes_) reads.push_back(node.read);
  std::vector<Tensor> values;
  WEFT_RETURN_IF_ERROR(model.session()->Run({}, reads, {}, &values));
  state->clear();
  for (size_t i = 0; i < nodes_.size(); ++i) (*state)[nodes_[i].name] = std::move(values[i]);
  return Status::OK();
}

void ElasticWorker::WriteSnapshot(Model& model) {
  const Clock::time_point start = Clock::now();
  MemorySnapshot snapshot;
  const TrainPosition& at = model.position();
  snapshot.position = {at.global_step, at.epoch, at.batch_index};
  Status written = ReadState(model, &snapshot.state);
  if (written.ok()) written = WriteMemorySnapshot(options_.snapshot_directory, snapshot);
  if (!written.ok()) {
    if (!snapshot_failed_) Say(StrCat("elastic: no memory snapshot: ", written.ToString()));
    snapshot_failed_ = true;
    return;
  }
  int64_t bytes = 0;
  for (const auto& [name, value] : snapshot.state) bytes += value.TotalBytes();
  Say(StrCat(
      "elastic: kept the state of step ", at.global_step, " in memory (", bytes / (1 << 20),
      " MiB, ",
      static_cast<int64_t>(std::chrono::duration<double, std::milli>(Clock::now() - start).count()),
      " ms)"));
}

StatusOr<std::optional<ServerConfig>> ElasticWorker::JoinNextGeneration() {
  JoinRequest request;
  request.worker = options_.worker;
  request.address = options_.address;
  request.has_state = has_state_;
  request.position = position_;
  request.failed_step = failed_step_;
  WEFT_ASSIGN_OR_RETURN(ElasticGeneration joined, client_.Join(request, kJoinTimeout));
  if (joined.finished) {
    report_.finished_before_joining = true;
    Say(StrCat("elastic: the job finished before worker ", options_.worker, " could join"));
    return std::optional<ServerConfig>();
  }
  generation_ = std::move(joined);
  ++report_.generations;
  report_.membership_changes = generation_.membership_changes;
  report_.steps_recomputed += generation_.steps_recomputed;
  recovery_pending_ = generation_.member_lost_at_unix_ms > 0;
  const ElasticPosition& at = generation_.position;
  Say(StrCat("elastic: generation ", generation_.number, ": ", generation_.workers.size(),
             " worker(s) (launch workers ", StrJoin(generation_.workers, ", "), "), this one rank ",
             generation_.rank,
             generation_.resume ? StrCat("; continuing after step ", at.global_step, " (epoch ",
                                         at.epoch + 1, ", batch ", at.batch_index, "), ",
                                         generation_.steps_recomputed, " step(s) to run again")
                                : std::string("; starting")));
  ServerConfig config;
  WEFT_ASSIGN_OR_RETURN(config.cluster,
                        ClusterSpec::FromJobs({{options_.job, generation_.addresses}}));
  config.task = {options_.job, generation_.rank};
  return std::optional<ServerConfig>(std::move(config));
}

void ElasticWorker::StartWatching(const distribute::Strategy& strategy) {
  StopWatching();
  stop_watching_ = false;
  stop_requested_ = false;
  member_lost_ = false;
  below_min_workers_ = false;
  first_survivor_ = false;
  const int64_t generation = generation_.number;
  const std::vector<int> members = generation_.workers;
  const distribute::StrategyExtended* extended = &strategy.extended();
  watcher_ = std::thread([this, generation, members, extended] {
    while (!stop_watching_) {
      StatusOr<MembershipChange> change = client_.Watch(generation, kWatchSlice, &stop_watching_);
      if (!change.ok()) {
        // The launcher may be busy or going away: ask again shortly, unless told to stop.
        if (!stop_watching_) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      if (!change->pending) continue;
      if (!change->lost.empty()) {
        int left = 0;
        int first = -1;
        for (int worker : members) {
          if (std::find(change->lost.begin(), change->lost.end(), worker) != change->lost.end()) {
            continue;
          }
          ++left;
          if (first < 0 || worker < first) first = worker;
        }
        below_min_workers_ = left < options_.min_workers;
        first_survivor_ = first == options_.worker;
        member_lost_ = true;
        // A step blocked on the lost worker ends now rather than at a transport's timeout.
        extended->AbortCollectives(Unavailable("launch worker(s) ", StrJoin(change->lost, ", "),
                                               " of elastic generation ", generation,
                                               " were lost; the others re-form without them"));
      }
      stop_requested_ = true;
      return;
    }
  });
}

void ElasticWorker::StopWatching() {
  stop_watching_ = true;
  if (watcher_.joinable()) watcher_.join();
}

Status ElasticWorker::BuildStateNodes(Model& model) {
  nodes_.clear();
  return model.AddToGraph([&](const Scope& root) -> Status {
    const Scope scope = root.NewSubScope("elastic_state");
    for (const auto& variable : model.distributed_variables()) {
      // The metrics' per-replica totals start again with the epoch's next step.
      if (variable->synchronization() == VariableSynchronization::kOnRead) continue;
      const Variable& component = variable->component(0);
      const Scope on = scope.NewSubScope(variable->name()).WithDevice(variable->devices()[0]);
      Output value = ops::Placeholder(on.WithOpName("value"), component.dtype(),
                                      PartialShape(component.shape()));
      nodes_.push_back({variable->name(), component.Read(on).name(), value.name(),
                        component.Assign(on, value).name()});
    }
    return scope.status();
  });
}

Status ElasticWorker::RestoreAndBroadcast(Model& model) {
  std::vector<Tensor> outputs;
  if (generation_.rank == 0) {
    NamedTensorList feeds;
    std::vector<std::string> assigns;
    for (const StateNodes& node : nodes_) {
      auto it = state_.find(node.name);
      if (it == state_.end()) {
        return FailedPrecondition("elastic: the state kept in memory has no value for variable '",
                                  node.name, "'");
      }
      feeds.emplace_back(node.value, it->second);
      assigns.push_back(node.assign);
    }
    WEFT_RETURN_IF_ERROR(model.session()
                             ->Run(feeds, {}, assigns, &outputs)
                             .WithContext("elastic: restoring the state kept in memory"));
  }
  std::string broadcast;
  WEFT_RETURN_IF_ERROR(model.AddToGraph([&](const Scope& root) -> Status {
    WEFT_ASSIGN_OR_RETURN(Output done,
                          model.strategy()->extended().SynchronizeInitialValues(
                              root.NewSubScope("elastic_resume"), model.strategy()->variables()));
    if (done) broadcast = done.name();
    return root.status();
  }));
  if (broadcast.empty()) return Status::OK();
  return model.session()
      ->Run({}, {}, {broadcast}, &outputs)
      .WithContext(StrCat("elastic: receiving the state of launch worker ", generation_.workers[0],
                          " (generation ", generation_.number, ")"));
}

Status ElasticWorker::OnTrainBegin(Model& model) {
  stopped_alone_ = false;
  WEFT_RETURN_IF_ERROR(BuildStateNodes(model));
  if (generation_.resume) {
    const Clock::time_point start = Clock::now();
    WEFT_RETURN_IF_ERROR(RestoreAndBroadcast(model));
    if (!has_state_) {
      report_.longest_heal_seconds =
          std::max(report_.longest_heal_seconds,
                   std::chrono::duration<double>(Clock::now() - start).count());
    }
    const ElasticPosition& at = generation_.position;
    model.ResumeAt(
        {.global_step = at.global_step, .epoch = at.epoch, .batch_index = at.batch_index});
  }
  step_at_start_ =
      generation_.resume ? generation_.position.global_step : model.position().global_step;
  // From here on the model's variables hold the generation's state, which EndGeneration keeps.
  state_in_model_ = true;
  return Status::OK();
}

Status ElasticWorker::OnTrainBatchEnd(Model& model, const Logs&) {
  if (recovery_pending_) {
    recovery_pending_ = false;
    const double seconds =
        static_cast<double>(UnixMillisNow() - generation_.member_lost_at_unix_ms) / 1000.0;
    report_.longest_recovery_seconds = std::max(report_.longest_recovery_seconds, seconds);
  }
  if (options_.snapshot_every_steps > 0 &&
      model.position().global_step % options_.snapshot_every_steps == 0) {
    WriteSnapshot(model);
  }
  if (generation_.workers.size() == 1 && stop_requested_) {
    stopped_alone_ = true;
    model.StopTraining();
  }
  return Status::OK();
}

StatusOr<bool> ElasticWorker::EndGeneration(Model& model, const Status& fit,
                                            bool stopped_for_membership) {
  StopWatching();
  saves_before_waiting_ = false;
  if (fit.ok() && !stopped_for_membership) {
    // Training is over: the memory snapshot has served its purpose; its RAM goes back.
    if (!options_.snapshot_directory.empty()) {
      io::RemoveAll(options_.snapshot_directory).IgnoreError();
      // The job's directory too, once its last worker's snapshot is gone (rmdir keeps a full one).
      ::rmdir(io::DirectoryOf(options_.snapshot_directory).c_str());
    }
    return false;
  }
  const bool lost = member_lost_.load();
  const bool progressed = model.position().global_step > step_at_start_;
  if (!fit.ok()) {
    if (!lost && !stop_requested_ && !MayBeMembership(fit)) return fit;
    if (lost || progressed) {
      fruitless_generations_ = 0;
    } else if (++fruitless_generations_ >= kMaxFruitlessGenerations) {
      return fit.WithContext(StrCat("elastic: ", kMaxFruitlessGenerations,
                                    " generations in a row failed with no worker lost"));
    }
  }
  // Keep the variables as the last completed step left them (under elastic training a failed
  // step updates none), unless this generation never got them (it failed while forming): the
  // previous generation's state stays then.
  if (state_in_model_) {
    Status read = ReadState(model, &state_);
    if (read.ok()) {
      has_state_ = true;
      const TrainPosition& at = model.position();
      position_ = {at.global_step, at.epoch, at.batch_index};
      failed_step_ = !fit.ok();
    } else {
      // This worker cannot give its state: the others (or a checkpoint) must.
      has_state_ = false;
      Say(StrCat("elastic: cannot keep this worker's state: ", read.ToString()));
    }
  }
  // The first survivor keeps the job's progress on disk before the others wait for lost workers.
  saves_before_waiting_ = below_min_workers_ && first_survivor_ && state_in_model_;
  Say(StrCat("elastic: generation ", generation_.number, " ended after step ",
             model.position().global_step, ": ",
             fit.ok() ? std::string("a worker waits to join") : fit.ToString()));
  nodes_.clear();
  state_in_model_ = false;
  return true;
}

}  // namespace weft::train
