// ElasticWorker: one worker's side of elastic multi-worker training (`weft launch --elastic`,
// docs/elastic.md). Before each generation it joins the launcher's membership and learns the
// members and its rank among them. While the generation trains it watches the membership: a lost
// member aborts this process's collectives at once, and a worker waiting to join makes every member
// stop after the same step (through StepPhaseMonitor's gather). When the generation ends it keeps
// this worker's variables and optimizer state in memory; at the start of the next one the member
// with the most advanced state (rank 0) restores its copy and broadcasts it to all, so that every
// member, joining workers included, continues from the same completed step and input position.
// As a Callback it runs inside Fit (OnTrainBegin restores). Not thread-safe, except
// stop_requested(), which its watcher thread sets.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "weft/distribute/strategy.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/distributed/cluster/elastic_membership_service.h"
#include "weft/train/callbacks.h"

namespace weft::train {

struct ElasticWorkerOptions {
  std::string membership;  // the membership's "host:port" (WEFT_ELASTIC_MEMBERSHIP)
  int worker = 0;          // this worker's index in the launch
  std::string address;     // its server's "host:port"
  std::string job = "worker";
  // One line per generation joined and ended, per memory snapshot found or written; null: none.
  std::function<void(const std::string&)> report;
  // Every this many steps the worker writes its state to `snapshot_directory` in RAM
  // (memory_snapshot.h); 0: never. A snapshot found there at the start is this worker's state,
  // unless the checkpoint in `checkpoint_directory` ("": none) is as new.
  int64_t snapshot_every_steps = 0;
  std::string snapshot_directory;
  std::string checkpoint_directory;
  // The fewest workers the job trains with (`weft launch --min-workers`).
  int min_workers = 1;
};

// What this worker saw of the job's membership.
struct ElasticReport {
  int64_t generations = 0;  // joined by this worker
  // Workers that left and joined the job, up to this worker's last generation.
  int64_t membership_changes = 0;
  int64_t steps_recomputed = 0;  // over the generations this worker joined
  // The longest time from the loss of a member to the next completed step, and the longest this
  // worker took to receive the state when it joined a running job (0: none).
  double longest_recovery_seconds = 0;
  double longest_heal_seconds = 0;
  bool finished_before_joining = false;  // the job ended before this worker could join
};

class ElasticWorker final : public Callback {
 public:
  explicit ElasticWorker(ElasticWorkerOptions options);
  ~ElasticWorker() override;  // StopWatching()
  ElasticWorker(const ElasticWorker&) = delete;
  ElasticWorker& operator=(const ElasticWorker&) = delete;

  // Before the first generation: takes the memory snapshot of an earlier run of the job, if there
  // is one newer than its checkpoint, as this worker's state. A snapshot that cannot be read is
  // reported and left aside (training then starts afresh or from the checkpoint).
  void LoadMemorySnapshot();

  // Joins the next generation: its cluster (the members' servers) with this worker's task in it;
  // nullopt when the job finished before this worker could join. Errors name the membership.
  StatusOr<std::optional<ServerConfig>> JoinNextGeneration();
  int64_t generation() const { return generation_.number; }
  // Whether the generation continues from a member's state in memory (else it starts afresh, or
  // from a checkpoint).
  bool resumes_from_memory() const { return generation_.resume; }

  // The generation's strategy exists: watches the membership until StopWatching (which must run
  // before the strategy is destroyed).
  void StartWatching(const distribute::Strategy& strategy);
  void StopWatching();
  bool stop_requested() const { return stop_requested_.load(); }
  // Whether this worker, alone in its generation, ended Fit because a worker waits to join.
  bool stopped_alone() const { return stopped_alone_; }

  Status OnTrainBegin(Model& model) override;
  Status OnTrainBatchEnd(Model& model, const Logs& logs) override;

  // After the generation's Fit: false when training is over (`fit` OK and not stopped for the
  // membership); true when the generation ended for a change of membership and training goes on in
  // the next (this worker's state is kept); `fit`'s error when the membership did not cause it.
  StatusOr<bool> EndGeneration(Model& model, const Status& fit, bool stopped_for_membership);

  const ElasticReport& report() const { return report_; }
  // After EndGeneration: whether the job is about to wait with fewer than min_workers and this
  // worker, the first survivor by launch index, is the one to save a checkpoint before it does.
  bool saves_before_waiting() const { return saves_before_waiting_; }

 private:
  // The reads and assigns of every trained variable's first component, made in OnTrainBegin.
  struct StateNodes {
    std::string name;  // the variable's
    std::string read;
    std::string value;  // the placeholder the assign takes
    std::string assign;
  };
  Status BuildStateNodes(Model& model);
  // Rank 0 assigns the kept state; then every member broadcasts rank 0's values to all replicas.
  Status RestoreAndBroadcast(Model& model);
  // This worker's state as the model holds it now (the reads of nodes_).
  Status ReadState(Model& model, std::map<std::string, Tensor>* state) const;
  // Writes the model's state to the memory snapshot; a failure is reported, training goes on.
  void WriteSnapshot(Model& model);
  void Say(const std::string& line) const {
    if (options_.report) options_.report(line);
  }

  const ElasticWorkerOptions options_;
  const ElasticMembershipClient client_;
  ElasticGeneration generation_;
  std::vector<StateNodes> nodes_;
  // This worker's state between generations: values by variable name, and where they stand.
  std::map<std::string, Tensor> state_;
  bool has_state_ = false;
  ElasticPosition position_;
  bool failed_step_ = false;
  // Whether this generation's model holds the state (OnTrainBegin finished), to be kept at its end.
  bool state_in_model_ = false;
  // Generations in a row that ended in errors with no member lost and no step gained.
  int fruitless_generations_ = 0;
  int64_t step_at_start_ = 0;
  bool recovery_pending_ = false;
  bool snapshot_failed_ = false;  // reported once
  bool stopped_alone_ = false;
  std::atomic<bool> stop_watching_{false};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> member_lost_{false};
  // Set by the watcher with member_lost_: whether fewer than min_workers members are left, and
  // whether this worker is the first of them by launch index.
  std::atomic<bool> below_min_workers_{false};
  std::atomic<bool> first_survivor_{false};
  bool saves_before_waiting_ = false;
  std::thread watcher_;
  ElasticReport report_;
};

}  // namespace weft::train
