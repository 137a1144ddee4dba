#include "weft/train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <utility>

#include "weft/core/str_util.h"
#include "weft/data/dataset.h"
#include "weft/distribute/central_storage_strategy.h"
#include "weft/distribute/multi_worker_mirrored_strategy.h"
#include "weft/distribute/parameter_server_strategy.h"
#include "weft/distribute/strategy.h"
#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/runtime/cpu_device.h"
#include "weft/runtime/device_factory.h"
#include "weft/runtime/session.h"
#include "weft/runtime/trace/step_breakdown.h"
#include "weft/train/callbacks.h"
#include "weft/train/elastic_worker.h"
#include "weft/train/memory_snapshot.h"
#include "weft/train/model.h"
#include "weft/train/optimizer.h"
#include "weft/train/train_setup.h"
#include "weft/train/workloads.h"

namespace weft::train {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// FNV-1a over the bytes of `tensors`: equal on two workers exactly when their weights are
// bitwise equal (up to hash collisions).
uint64_t Fingerprint(const std::vector<Tensor>& tensors) {
  uint64_t hash = 14695981039346656037ull;
  for (const Tensor& tensor : tensors) {
    const auto* bytes = static_cast<const unsigned char*>(tensor.raw_data());
    for (size_t i = 0; i < tensor.TotalBytes(); ++i) {
      hash = (hash ^ bytes[i]) * 1099511628211ull;
    }
  }
  return hash;
}

// Turns Fit's logs into `weft train`'s progress reports, measures the training throughput, and
// traces the steps of the step breakdown.
class TrainLoopReporter final : public Callback {
 public:
  TrainLoopReporter(const TrainOptions& options, const TrainCallbacks& callbacks,
                    int64_t steps_per_epoch, int64_t tokens_per_example)
      : options_(options),
        callbacks_(callbacks),
        steps_per_epoch_(steps_per_epoch),
        tokens_per_example_(tokens_per_example) {}

  Status OnEpochBegin(Model& model, int epoch) override {
    progress_ = TrainProgress();
    progress_.epoch = epoch + 1;
    progress_.epochs = options_.epochs;
    progress_.steps_in_epoch = steps_per_epoch_;
    progress_.tokens_per_example = tokens_per_example_;
    // A resumed epoch starts where the checkpoint left it.
    if (model.position().epoch == epoch) progress_.step_in_epoch = model.position().batch_index;
    epoch_seconds_ = 0;
    epoch_images_ = 0;
    return Status::OK();
  }

  bool TraceTrainBatch(int64_t /*step*/) override {
    breakdown_step_ = run_steps_ >= kStepBreakdownWarmup &&
                      run_steps_ < kStepBreakdownWarmup + options_.step_breakdown_steps;
    return breakdown_step_;
  }

  Status OnTrainBatchTraced(Model&, const proto::StepStats& stats, int64_t start_nanos,
                            int64_t end_nanos) override {
    // Fit hands every traced step to every callback: the trace writer's steps are not ours.
    if (breakdown_step_) breakdown_.AddStep(stats, start_nanos, end_nanos);
    return Status::OK();
  }

  Status OnTrainBatchEnd(Model& model, const Logs& logs) override {
    ++run_steps_;
    epoch_seconds_ += logs.at("seconds");
    epoch_images_ += static_cast<int64_t>(logs.at("examples"));
    if (run_steps_ > options_.throughput_warmup_steps) {
      timed_seconds_ += logs.at("seconds");
      timed_images_ += static_cast<int64_t>(logs.at("examples"));
    }
    final_loss_ = logs.at("loss");
    ++progress_.step_in_epoch;
    progress_.total_steps = model.position().global_step;
    progress_.loss = final_loss_;
    progress_.images_per_sec = epoch_images_ / std::max(epoch_seconds_, 1e-9);
    progress_.eta_seconds = (progress_.steps_in_epoch - progress_.step_in_epoch) *
                            (epoch_seconds_ / static_cast<double>(progress_.step_in_epoch));
    if (callbacks_.on_step) callbacks_.on_step(progress_);
    return Status::OK();
  }

  Status OnEpochEnd(Model&, int, const Logs&) override {
    training_seconds_ += epoch_seconds_;
    trained_images_ += epoch_images_;
    if (callbacks_.on_epoch_end) callbacks_.on_epoch_end(progress_);
    return Status::OK();
  }

  // Over the steps after TrainOptions::throughput_warmup_steps, or every step when none came after.
  double images_per_sec() const {
    if (timed_seconds_ > 0) return static_cast<double>(timed_images_) / timed_seconds_;
    return static_cast<double>(trained_images_) / std::max(training_seconds_, 1e-9);
  }
  double final_loss() const { return final_loss_; }
  const StepBreakdown& breakdown() const { return breakdown_; }

 private:
  const TrainOptions& options_;
  const TrainCallbacks& callbacks_;
  int64_t steps_per_epoch_;
  int64_t tokens_per_example_;
  TrainProgress progress_;
  int64_t run_steps_ = 0;        // steps of this run (the global step counts earlier runs' too)
  bool breakdown_step_ = false;  // whether the coming step is one of the breakdown's
  double epoch_seconds_ = 0, training_seconds_ = 0, timed_seconds_ = 0;
  int64_t epoch_images_ = 0, trained_images_ = 0, timed_images_ = 0;
  double final_loss_ = 0;
  StepBreakdown breakdown_;
};

// Every component of the trained variables (not the per-replica metric totals), read in one step.
StatusOr<std::vector<Tensor>> ReadTrainedVariables(Model& model) {
  std::vector<std::string> reads;
  WEFT_RETURN_IF_ERROR(model.AddToGraph([&](const Scope& root) -> Status {
    const Scope scope = root.NewSubScope("fingerprint");
    for (const auto& variable : model.distributed_variables()) {
      if (variable->synchronization() == VariableSynchronization::kOnRead) continue;
      for (const Variable& component : variable->components()) {
        reads.push_back(component.Read(scope).name());
      }
    }
    return scope.status();
  }));
  std::vector<Tensor> values;
  WEFT_RETURN_IF_ERROR(model.session()->Run({}, reads, {}, &values));
  return values;
}

// Compiles the workload's model for `replicas` replicas under `strategy`.
Status CompileWorkload(const TrainOptions& options, const distribute::Strategy& strategy,
                       int replicas, const proto::ConfigProto& session_config, Workload& workload) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer,
                        MakeOptimizer(options, workload.steps_per_epoch));
  // The partitions of a replicated step run at once, and a partition woken by another (a _Recv,
  // a collective) continues on an inter-op thread: one per replica. Measured with W1 on 2 devices
  // (2 cores): 1 inter-op thread ~40k images/s, 2 threads ~63k, 3 threads ~61k.
  int inter_op_threads = options.inter_op_threads;
  if (replicas > 1 && inter_op_threads > 0) inter_op_threads = std::max(inter_op_threads, replicas);
  WEFT_ASSIGN_OR_RETURN(DTypePolicy policy, DTypePolicy::FromName(options.dtype_policy));
  return workload.model->Compile(std::move(optimizer), workload.loss, workload.metrics,
                                 {.strategy = &strategy,
                                  .inter_op_threads = inter_op_threads,
                                  .intra_op_threads = options.intra_op_threads,
                                  .target = options.target,
                                  .session_config = session_config,
                                  .steps_per_execution = options.steps_per_execution,
                                  .exactly_once_input = options.exactly_once_input,
                                  .dtype_policy = std::move(policy)});
}

// Trains `workload` as the options say: on batches this process reads, or (per_worker_dataset)
// on the datasets every worker reads itself.
Status FitWorkload(Model& model, const Workload& workload, const TrainOptions& options,
                   std::vector<Callback*> callbacks) {
  const FitOptions fit = {.epochs = options.epochs,
                          .steps_per_epoch = workload.steps_per_epoch,
                          .max_steps = options.max_steps,
                          .callbacks = std::move(callbacks)};
  if (!options.per_worker_dataset) return model.Fit(workload.train, fit).status();
  if (!workload.per_worker_train) {
    return InvalidArgument("--per-worker-dataset: this model's data has no dataset a worker ",
                           "builds itself (char_transformer's windows are made by a Map)");
  }
  return model.Fit(workload.per_worker_train, fit).status();
}

// The trace writer's options: the task's trace file, the steps to trace, and the task's name in a
// multi-worker job.
TraceWriterOptions TraceOptions(const TrainOptions& options, const std::string& trace_file,
                                int task_index) {
  return {
      .path = trace_file,
      .first_step = options.trace_first_step,
      .last_step = options.trace_last_step,
      .task_name =
          options.strategy == "multi_worker_mirrored" && options.worker_cluster.has_value()
              ? StrCat("/job:", options.worker_cluster->task.job, "/replica:0/task:", task_index)
              : std::string()};
}

// What the callbacks saw of the run: its steps, loss, speed, checkpoints and traces.
TrainSummary SummarizeRun(const Model& model, const TrainLoopReporter& reporter,
                          const ModelCheckpoint& checkpoint, const TraceWriter& trace_writer,
                          const std::string& trace_file) {
  TrainSummary summary;
  summary.steps = model.position().global_step;
  summary.resumed_from_step = checkpoint.resumed_from_step();
  summary.final_loss = reporter.final_loss();
  summary.train_images_per_sec = reporter.images_per_sec();
  summary.checkpoints_saved = checkpoint.saves();
  summary.max_save_stall_seconds = checkpoint.max_stall_seconds();
  if (reporter.breakdown().steps() > 0) summary.step_breakdown = reporter.breakdown().ToString();
  if (trace_writer.written()) {
    summary.trace_file = trace_file;
    summary.traced_steps = trace_writer.traced_steps();
  }
  return summary;
}

// The workers that step together and this one's index among them: those of a multi-worker job,
// else 1 and 0.
std::pair<int, int> SynchronousWorkers(const TrainOptions& options) {
  if (options.strategy != "multi_worker_mirrored" || !options.worker_cluster.has_value()) {
    return {1, 0};
  }
  const TaskId& task = options.worker_cluster->task;
  return {options.worker_cluster->cluster.NumTasks(task.job), task.index};
}

// What the strategy adds to the summary: the replicas and collectives, the parameter servers'
// recoveries, the workers' step phases.
void AddStrategyFigures(const TrainOptions& options, const distribute::Strategy& strategy,
                        const Model& model, const StepPhaseMonitor* phases, TrainSummary* summary) {
  summary->replicas = strategy.num_replicas_in_sync();
  summary->collective_transport = StrJoin(strategy.extended().CollectiveTransportNames(), "; ");
  if (options.strategy == "parameter_server") {
    summary->workers = options.worker_cluster->cluster.NumTasks("worker");
    summary->ps_tasks = options.worker_cluster->cluster.NumTasks("ps");
    summary->rescheduled_steps = model.rescheduled_steps();
    summary->per_worker_datasets_rebuilt = model.per_worker_datasets_rebuilt();
    summary->worker_recoveries = model.worker_recoveries();
    summary->ps_recoveries = model.ps_recoveries();
    summary->steps_lost = model.steps_lost();
    summary->exactly_once = options.exactly_once_input;
    summary->input_shards_reissued = model.input_shards_reissued();
    summary->lost_commits = model.lost_commits();
  }
  if (phases != nullptr) {
    summary->worker_step_phases = phases->MeanPhases();
    summary->stragglers = phases->stragglers();
  }
}

// Synchronous multi-worker training: every worker's step phases, gathered after each step through
// the gradients' collective group, and the straggler they name. Null otherwise.
std::unique_ptr<StepPhaseMonitor> MakeStepPhaseMonitor(const TrainOptions& options,
                                                       const distribute::Strategy& strategy,
                                                       const TrainCallbacks& callbacks,
                                                       const ElasticWorker* elastic) {
  const int workers = strategy.num_workers();
  if (options.strategy != "multi_worker_mirrored" || workers < 2) return nullptr;
  const distribute::StrategyExtended& extended = strategy.extended();
  StepPhaseMonitor::Options monitor;
  for (int i = 0; i < workers; ++i) {
    monitor.workers.push_back(
        StrCat("/job:", options.worker_cluster->task.job, "/replica:0/task:", i));
  }
  monitor.communication_nanos = [&extended] { return extended.CrossWorkerCommunicationNanos(); };
  monitor.all_gather = [&extended](const std::vector<double>& values) {
    return extended.AllGatherFromWorkers(values);
  };
  monitor.on_straggler = callbacks.on_straggler;
  if (elastic != nullptr) monitor.stop_requested = [elastic] { return elastic->stop_requested(); };
  return std::make_unique<StepPhaseMonitor>(std::move(monitor));
}

// After an elastic generation's Fit: whether it ended for a change of membership (training goes
// on in the next generation). A job about to wait with fewer than --min-workers saves its progress
// first (`checkpoint`, null without --checkpoint-dir), so that one that never gets them back
// resumes from there; a failed save is reported and the wait goes on.
StatusOr<bool> EndElasticGeneration(ElasticWorker& elastic, Model& model, const Status& fit,
                                    const StepPhaseMonitor* phases, ModelCheckpoint* checkpoint,
                                    const TrainCallbacks& callbacks) {
  const bool stopped =
      (phases != nullptr && phases->stopped_on_request()) || elastic.stopped_alone();
  WEFT_ASSIGN_OR_RETURN(bool next_generation, elastic.EndGeneration(model, fit, stopped));
  if (next_generation && elastic.saves_before_waiting() && checkpoint != nullptr) {
    const Status saved = checkpoint->SaveNow(model);
    if (!saved.ok() && callbacks.on_checkpoint) {
      callbacks.on_checkpoint(
          StrCat("no checkpoint before waiting for lost workers: ", saved.ToString()));
    }
  }
  return next_generation;
}

// One run of the training loop: all of it, or under elastic training one generation (nullopt when
// it ended for a change of membership and training goes on in the next).
StatusOr<std::optional<TrainSummary>> TrainGeneration(const TrainOptions& options,
                                                      const TrainCallbacks& callbacks,
                                                      ElasticWorker* elastic) {
  auto wall_start = Clock::now();
  const auto [workers, task_index] = SynchronousWorkers(options);
  WEFT_RETURN_IF_ERROR(ValidateTrainOptions(options, workers));
  WEFT_ASSIGN_OR_RETURN(Workload workload, MakeWorkload(options));

  // On a cluster the devices come from its master.
  WEFT_ASSIGN_OR_RETURN(proto::ConfigProto session_config, MakeSessionConfig(options));
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> devices, ReplicaDevices(options, session_config));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<distribute::Strategy> strategy,
                        MakeStrategy(options, devices, elastic));
  // The membership is watched while the strategy's collectives exist.
  if (elastic != nullptr) elastic->StartWatching(*strategy);
  struct StopWatchingFirst {
    ElasticWorker* elastic;
    ~StopWatchingFirst() {
      if (elastic != nullptr) elastic->StopWatching();
    }
  } stop_watching_first{elastic};
  // The model, compiled and trained as any user's. It must not outlive the strategy: it is
  // destroyed first, at the end of this function.
  WEFT_RETURN_IF_ERROR(CompileWorkload(options, *strategy, static_cast<int>(devices.size()),
                                       session_config, workload));
  Model& model = *workload.model;
  struct DestroyModelFirst {
    Workload& workload;
    ~DestroyModelFirst() { workload.model.reset(); }
  } destroy_model_first{workload};
  // Progress counts tokens only for a text model (an image is one "token" of its workload).
  TrainLoopReporter reporter(options, callbacks, workload.steps_per_epoch,
                             workload.tokens_per_example > 1 ? workload.tokens_per_example : 0);
  // An elastic generation that continues from a member's state in memory reads no checkpoint.
  ModelCheckpoint checkpoint(options.checkpoint_dir,
                             {.save_every_steps = options.save_every_steps,
                              .keep = options.keep_checkpoints,
                              .async = options.async_checkpoints,
                              .report = callbacks.on_checkpoint,
                              .resume = elastic == nullptr || !elastic->resumes_from_memory()});
  std::string trace_file;
  if (!options.trace_path.empty()) trace_file = TracePathForTask(options.trace_path, task_index);
  TraceWriter trace_writer(TraceOptions(options, trace_file, task_index));
  std::vector<Callback*> fit_callbacks = {&reporter};
  if (!options.checkpoint_dir.empty()) fit_callbacks.push_back(&checkpoint);
  // After the checkpoint's: a generation's state in memory is newer than any checkpoint.
  if (elastic != nullptr) fit_callbacks.push_back(elastic);
  if (!trace_file.empty()) fit_callbacks.push_back(&trace_writer);
  std::unique_ptr<StepPhaseMonitor> phases =
      MakeStepPhaseMonitor(options, *strategy, callbacks, elastic);
  if (phases != nullptr) fit_callbacks.push_back(phases.get());
  const Status fit = FitWorkload(model, workload, options, std::move(fit_callbacks));
  if (elastic != nullptr) {
    WEFT_ASSIGN_OR_RETURN(
        bool next_generation,
        EndElasticGeneration(*elastic, model, fit, phases.get(),
                             options.checkpoint_dir.empty() ? nullptr : &checkpoint, callbacks));
    if (next_generation) return std::optional<TrainSummary>();
  }
  WEFT_RETURN_IF_ERROR(fit);

  TrainSummary summary = SummarizeRun(model, reporter, checkpoint, trace_writer, trace_file);
  summary.workers = workers;
  summary.worker_index = task_index;
  AddStrategyFigures(options, *strategy, model, phases.get(), &summary);
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> trained, ReadTrainedVariables(model));
  summary.variables_fingerprint = Fingerprint(trained);
  summary.train_tokens_per_sec =
      summary.train_images_per_sec * static_cast<double>(workload.tokens_per_example);
  WEFT_RETURN_IF_ERROR(workload.evaluate(model, &summary));
  summary.wall_seconds = SecondsSince(wall_start);
  return std::optional<TrainSummary>(std::move(summary));
}

// Where worker `worker` keeps its memory snapshots ("" without them): the same directory for the
// same training, so that the same command run again finds them.
std::string SnapshotDirectory(const TrainOptions& options, int worker) {
  if (options.snapshot_every_steps <= 0) return "";
  if (!options.snapshot_dir.empty()) return StrCat(options.snapshot_dir, "/worker-", worker);
  const std::string training =
      StrCat(static_cast<int>(options.model), ",", options.mlp_width, ",", options.batch_size, ",",
             options.epochs, ",", options.max_steps, ",", options.seed, ",", options.optimizer, ",",
             options.learning_rate, ",", options.dtype_policy, ",", options.devices, ",",
             options.data_dir, ",", options.worker_cluster->cluster.NumTasks("worker"));
  char name[32];
  std::snprintf(name, sizeof(name), "job-%016llx",
                static_cast<unsigned long long>(std::hash<std::string>()(training)));
  return DefaultMemorySnapshotDirectory(name, worker);
}

// Every generation splits the job's global batch over its members: InvalidArgument, before any
// training, unless each member count the job may reach splits it evenly.
Status CheckElasticBatch(const TrainOptions& options) {
  const int most = options.worker_cluster->cluster.NumTasks(options.worker_cluster->task.job);
  const int fewest = std::clamp(options.elastic_min_workers, 1, most);
  int64_t all = 1;  // the least common multiple of the replica counts
  for (int members = fewest; members <= most; ++members) {
    all = std::lcm(all, static_cast<int64_t>(members) * options.devices);
  }
  for (int members = fewest; members <= most; ++members) {
    if (options.batch_size % (members * options.devices) == 0) continue;
    const int64_t suggested = std::max<int64_t>(all, (options.batch_size + all / 2) / all * all);
    return InvalidArgument(
        "elastic training with ", fewest, " to ", most, " workers (", options.devices,
        " device(s) each) needs a global batch that splits evenly over each of those counts: ",
        options.batch_size, " does not split over ", members, " workers; try --batch-size ",
        suggested);
  }
  return Status::OK();
}

// Elastic training: generation after generation until one finishes training.
StatusOr<TrainSummary> TrainElastic(const TrainOptions& options, const TrainCallbacks& callbacks) {
  if (options.strategy != "multi_worker_mirrored" || !options.worker_cluster.has_value()) {
    return InvalidArgument("elastic training (weft launch --elastic) needs --strategy ",
                           "multi_worker_mirrored, not '", options.strategy, "'");
  }
  if (options.steps_per_execution != 1) {
    return InvalidArgument("elastic training runs one step per execution (a failed execution of ",
                           "several steps cannot be run again from a completed step); drop ",
                           "--steps-per-execution ", options.steps_per_execution);
  }
  WEFT_RETURN_IF_ERROR(CheckElasticBatch(options));
  const auto wall_start = Clock::now();
  const TaskId& task = options.worker_cluster->task;
  WEFT_ASSIGN_OR_RETURN(std::string address,
                        options.worker_cluster->cluster.TaskAddress(task.job, task.index));
  ElasticWorker elastic({.membership = options.elastic_membership,
                         .worker = task.index,
                         .address = address,
                         .job = task.job,
                         .report = callbacks.on_membership,
                         .snapshot_every_steps = options.snapshot_every_steps,
                         .snapshot_directory = SnapshotDirectory(options, task.index),
                         .checkpoint_directory = options.checkpoint_dir,
                         .min_workers = options.elastic_min_workers});
  elastic.LoadMemorySnapshot();
  std::optional<TrainSummary> summary;
  while (!summary.has_value()) {
    WEFT_ASSIGN_OR_RETURN(std::optional<ServerConfig> cluster, elastic.JoinNextGeneration());
    if (!cluster.has_value()) {
      summary = TrainSummary();
      break;
    }
    TrainOptions generation = options;
    generation.worker_cluster = std::move(cluster);
    WEFT_ASSIGN_OR_RETURN(summary, TrainGeneration(generation, callbacks, &elastic));
  }
  const ElasticReport& report = elastic.report();
  summary->elastic = true;
  summary->worker_index = task.index;
  summary->generations = report.generations;
  summary->membership_changes = report.membership_changes;
  summary->steps_recomputed = report.steps_recomputed;
  summary->elastic_recovery_seconds = report.longest_recovery_seconds;
  summary->elastic_heal_seconds = report.longest_heal_seconds;
  summary->finished_before_joining = report.finished_before_joining;
  summary->wall_seconds = SecondsSince(wall_start);
  return *std::move(summary);
}

}  // namespace

StatusOr<TrainSummary> Train(const TrainOptions& options, const TrainCallbacks& callbacks) {
  if (!options.elastic_membership.empty()) return TrainElastic(options, callbacks);
  if (options.snapshot_every_steps > 0) {
    return InvalidArgument(
        "memory snapshots (--snapshot-every-steps) keep an elastic job's state; ",
        "run under weft launch --elastic, or use --checkpoint-dir");
  }
  WEFT_ASSIGN_OR_RETURN(std::optional<TrainSummary> summary,
                        TrainGeneration(options, callbacks, nullptr));
  return *std::move(summary);
}

std::string TracePathForTask(const std::string& path, int task_index) {
  if (task_index == 0) return path;
  const std::string suffix = StrCat(".task", task_index);
  constexpr std::string_view kJson = ".json";
  if (path.size() > kJson.size() &&
      path.compare(path.size() - kJson.size(), kJson.size(), kJson) == 0) {
    return path.substr(0, path.size() - kJson.size()) + suffix + std::string(kJson);
  }
  return path + suffix;
}

}  // namespace weft::train
