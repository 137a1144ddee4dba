#include "weft/train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <memory>

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
#include "weft/train/model.h"
#include "weft/train/optimizer.h"
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

// This worker's share of the host's cores: the workers of one host (same address host) split
// them, since each one's threads would otherwise fight the others' (measured with W1 on 2 workers
// of the 2-core machine: ~110k images/s at 1 thread each, ~70-95k at 2).
int CoresPerLocalWorker(const ServerConfig& config) {
  auto host_of = [&](int task) {
    StatusOr<std::string> address = config.cluster.TaskAddress(config.task.job, task);
    return address.ok() ? address->substr(0, address->rfind(':')) : std::string();
  };
  const std::string mine = host_of(config.task.index);
  int local = 0;
  for (int t = 0; t < config.cluster.NumTasks(config.task.job); ++t) local += host_of(t) == mine;
  return std::max(1, NumSchedulableCpus() / std::max(1, local));
}

StatusOr<std::unique_ptr<distribute::Strategy>> MakeStrategy(
    const TrainOptions& options, const std::vector<std::string>& devices) {
  std::unique_ptr<distribute::Strategy> strategy;
  if (options.strategy == "multi_worker_mirrored") {
    if (!options.worker_cluster.has_value()) {
      return InvalidArgument(
          "strategy multi_worker_mirrored needs a cluster of workers: run under ",
          "`weft launch`, or set WEFT_CONFIG or TF_CONFIG");
    }
    distribute::MultiWorkerOptions multi;
    multi.server = *options.worker_cluster;
    multi.devices_per_worker = static_cast<int>(devices.size());
    multi.device_type = options.device_type;
    multi.force_tcp_collectives = options.force_tcp_collectives;
    multi.communication_dtype = options.all_reduce_dtype;
    multi.hostname = options.hostname;
    multi.collective_timeout = std::chrono::milliseconds(options.collective_timeout_ms);
    multi.intra_op_threads = options.intra_op_threads > 0
                                 ? options.intra_op_threads
                                 : CoresPerLocalWorker(*options.worker_cluster);
    WEFT_ASSIGN_OR_RETURN(strategy,
                          distribute::MultiWorkerMirroredStrategy::Create(std::move(multi)));
  } else if (options.strategy == "parameter_server") {
    if (!options.worker_cluster.has_value()) {
      return InvalidArgument(
          "strategy parameter_server needs a cluster of workers and ps tasks: run under "
          "`weft launch --workers N --ps M`, or set WEFT_CONFIG or TF_CONFIG");
    }
    distribute::ParameterServerOptions ps;
    ps.server = *options.worker_cluster;
    if (options.worker_timeout_ms > 0) ps.worker_timeout_ms = options.worker_timeout_ms;
    WEFT_ASSIGN_OR_RETURN(strategy, distribute::ParameterServerStrategy::Create(std::move(ps)));
  } else if (options.strategy == "central_storage") {
    WEFT_ASSIGN_OR_RETURN(strategy, distribute::CentralStorageStrategy::Create(devices));
  } else if (devices.size() == 1 && options.target.empty() && options.strategy != "mirrored") {
    WEFT_ASSIGN_OR_RETURN(strategy, distribute::OneDeviceStrategy::Create(devices[0]));
  } else {
    WEFT_ASSIGN_OR_RETURN(strategy, distribute::MirroredStrategy::Create(devices));
  }
  return strategy;
}

// The session's config: the thread pools, and with a target its worker timeout and cluster.
StatusOr<proto::ConfigProto> MakeSessionConfig(const TrainOptions& options) {
  proto::ConfigProto config;
  if (options.target.empty()) return config;
  config.set_worker_timeout_in_ms(options.worker_timeout_ms);
  if (!options.cluster.empty()) {
    StatusOr<ClusterSpec> cluster = ClusterSpec::FromFlag(options.cluster);
    if (!cluster.ok()) return cluster.status().WithContext("cluster");
    *config.mutable_cluster_def() = cluster->ToProto();
  }
  return config;
}

// The devices of type `device_type` of the cluster behind `target`, the master's task first.
StatusOr<std::vector<std::string>> ClusterDevices(const std::string& target,
                                                  const proto::ConfigProto& config,
                                                  const std::string& device_type) {
  SessionOptions session_options;
  session_options.target = target;
  session_options.config = config;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(session_options));
  std::vector<proto::DeviceAttributes> attributes;
  Status listed = session->ListDevices(&attributes);
  session->Close().IgnoreError();
  WEFT_RETURN_IF_ERROR(listed);
  std::vector<std::string> devices;
  for (const proto::DeviceAttributes& device : attributes) {
    if (device.device_type() == device_type) devices.push_back(device.name());
  }
  if (devices.empty()) return FailedPrecondition("the cluster has no ", device_type, " devices");
  return devices;
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

  double images_per_sec() const { return trained_images_ / std::max(training_seconds_, 1e-9); }
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
  double epoch_seconds_ = 0, training_seconds_ = 0;
  int64_t epoch_images_ = 0, trained_images_ = 0;
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

Status Validate(const TrainOptions& options, int workers) {
  if (options.batch_size <= 0) {
    return InvalidArgument("batch size must be positive, got ", options.batch_size);
  }
  if (options.epochs <= 0) return InvalidArgument("epochs must be positive, got ", options.epochs);
  // A cluster's servers make its devices: only a local run needs the type made here.
  if (options.target.empty()) {
    WEFT_RETURN_IF_ERROR(DefaultDeviceFactories().CheckDeviceType(options.device_type));
  }
  if (options.devices < 1) {
    return InvalidArgument("devices must be at least 1, got ", options.devices);
  }
  const bool multi_worker = options.strategy == "multi_worker_mirrored";
  const bool parameter_server = options.strategy == "parameter_server";
  if (!options.strategy.empty() && options.strategy != "one_device" &&
      options.strategy != "mirrored" && options.strategy != "central_storage" && !multi_worker &&
      !parameter_server) {
    return InvalidArgument("unknown strategy '", options.strategy,
                           "' (expected one_device, mirrored, central_storage, "
                           "multi_worker_mirrored or parameter_server)");
  }
  if (parameter_server && !options.target.empty()) {
    return InvalidArgument("strategy parameter_server runs its coordinator in this process; it ",
                           "takes no target (drop --target ", options.target, ")");
  }
  if (parameter_server && options.devices != 1) {
    return InvalidArgument("strategy parameter_server runs one replica on each worker task; ",
                           "--devices ", options.devices, " is not supported");
  }
  if (options.strategy == "central_storage" && !options.target.empty()) {
    return InvalidArgument("strategy central_storage keeps the variables in this process; it ",
                           "takes no target (drop --target ", options.target, ")");
  }
  if (multi_worker && !options.target.empty()) {
    return InvalidArgument("strategy multi_worker_mirrored runs in every worker process; it takes ",
                           "no target (drop --target ", options.target, ")");
  }
  if (options.strategy == "one_device" && options.devices != 1) {
    return InvalidArgument("strategy one_device runs on 1 device, not ", options.devices,
                           " (use mirrored for several)");
  }
  if (options.target.empty() && options.batch_size % (options.devices * workers) != 0) {
    if (workers > 1) {
      return InvalidArgument("the global batch size ", options.batch_size,
                             " is not divisible by the ", options.devices * workers, " replicas (",
                             workers, " workers x ", options.devices, " devices)");
    }
    return InvalidArgument("the global batch size ", options.batch_size,
                           " is not divisible by the ", options.devices, " devices");
  }
  if (!options.target.empty() && options.devices != 1) {
    return InvalidArgument("with a target, the cluster's servers choose the devices (weft server ",
                           "--devices); drop --devices ", options.devices);
  }
  if (!options.trace_path.empty() &&
      (options.trace_first_step < 1 || options.trace_last_step < options.trace_first_step)) {
    return InvalidArgument("trace steps ", options.trace_first_step, ":", options.trace_last_step,
                           " are not a range of steps (1 <= FIRST <= LAST)");
  }
  if (options.save_every_steps < 0) {
    return InvalidArgument("save every steps must be 0 (only at the end) or positive, got ",
                           options.save_every_steps);
  }
  return Status::OK();
}

// The devices of the replicas: --devices of the device type here, or every device of that type of
// the cluster's tasks.
StatusOr<std::vector<std::string>> ReplicaDevices(const TrainOptions& options,
                                                  const proto::ConfigProto& session_config) {
  std::vector<std::string> devices;
  if (options.target.empty()) {
    for (int i = 0; i < options.devices; ++i) {
      devices.push_back(StrCat("/device:", options.device_type, ":", i));
    }
  } else {
    WEFT_ASSIGN_OR_RETURN(devices,
                          ClusterDevices(options.target, session_config, options.device_type));
  }
  const int replicas = static_cast<int>(devices.size());
  if (options.batch_size % replicas != 0) {
    return InvalidArgument("the global batch size ", options.batch_size,
                           " is not divisible by the cluster's ", replicas, " ",
                           options.device_type, " devices");
  }
  return devices;
}

// Compiles the workload's model for `replicas` replicas under `strategy`.
Status CompileWorkload(const TrainOptions& options, std::unique_ptr<Optimizer> optimizer,
                       const distribute::Strategy& strategy, int replicas,
                       const proto::ConfigProto& session_config, Workload& workload) {
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
                                  .dtype_policy = std::move(policy)});
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

// Synchronous multi-worker training: every worker's step phases, gathered after each step through
// the gradients' collective group, and the straggler they name. Null otherwise.
std::unique_ptr<StepPhaseMonitor> MakeStepPhaseMonitor(const TrainOptions& options,
                                                       const distribute::Strategy& strategy,
                                                       const TrainCallbacks& callbacks) {
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
  return std::make_unique<StepPhaseMonitor>(std::move(monitor));
}

}  // namespace

StatusOr<TrainSummary> Train(const TrainOptions& options, const TrainCallbacks& callbacks) {
  auto wall_start = Clock::now();
  int workers = 1;
  int task_index = 0;
  if (options.strategy == "multi_worker_mirrored" && options.worker_cluster.has_value()) {
    const TaskId& task = options.worker_cluster->task;
    workers = options.worker_cluster->cluster.NumTasks(task.job);
    task_index = task.index;
  }
  WEFT_RETURN_IF_ERROR(Validate(options, workers));
  WEFT_ASSIGN_OR_RETURN(Workload workload, MakeWorkload(options));

  // On a cluster the devices come from its master.
  WEFT_ASSIGN_OR_RETURN(proto::ConfigProto session_config, MakeSessionConfig(options));
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> devices, ReplicaDevices(options, session_config));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<distribute::Strategy> strategy,
                        MakeStrategy(options, devices));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer, MakeOptimizer(options));

  // The model, compiled and trained as any user's. It must not outlive the strategy: it is
  // destroyed first, at the end of this function.
  WEFT_RETURN_IF_ERROR(CompileWorkload(options, std::move(optimizer), *strategy,
                                       static_cast<int>(devices.size()), session_config, workload));
  Model& model = *workload.model;
  struct DestroyModelFirst {
    Workload& workload;
    ~DestroyModelFirst() { workload.model.reset(); }
  } destroy_model_first{workload};
  // Progress counts tokens only for a text model (an image is one "token" of its workload).
  TrainLoopReporter reporter(options, callbacks, workload.steps_per_epoch,
                             workload.tokens_per_example > 1 ? workload.tokens_per_example : 0);
  ModelCheckpoint checkpoint(options.checkpoint_dir, {.save_every_steps = options.save_every_steps,
                                                      .keep = options.keep_checkpoints,
                                                      .async = options.async_checkpoints,
                                                      .report = callbacks.on_checkpoint});
  std::string trace_file;
  if (!options.trace_path.empty()) trace_file = TracePathForTask(options.trace_path, task_index);
  TraceWriter trace_writer(TraceOptions(options, trace_file, task_index));
  std::vector<Callback*> fit_callbacks = {&reporter};
  if (!options.checkpoint_dir.empty()) fit_callbacks.push_back(&checkpoint);
  if (!trace_file.empty()) fit_callbacks.push_back(&trace_writer);
  std::unique_ptr<StepPhaseMonitor> phases = MakeStepPhaseMonitor(options, *strategy, callbacks);
  if (phases != nullptr) fit_callbacks.push_back(phases.get());
  WEFT_RETURN_IF_ERROR(model
                           .Fit(workload.train, {.epochs = options.epochs,
                                                 .steps_per_epoch = workload.steps_per_epoch,
                                                 .max_steps = options.max_steps,
                                                 .callbacks = fit_callbacks})
                           .status());

  TrainSummary summary = SummarizeRun(model, reporter, checkpoint, trace_writer, trace_file);
  summary.replicas = strategy->num_replicas_in_sync();
  summary.workers = workers;
  if (options.strategy == "parameter_server") {
    summary.workers = options.worker_cluster->cluster.NumTasks("worker");
    summary.ps_tasks = options.worker_cluster->cluster.NumTasks("ps");
    summary.rescheduled_steps = model.rescheduled_steps();
    summary.worker_recoveries = model.worker_recoveries();
    summary.ps_recoveries = model.ps_recoveries();
    summary.steps_lost = model.steps_lost();
  }
  summary.worker_index = task_index;
  if (phases != nullptr) {
    summary.worker_step_phases = phases->MeanPhases();
    summary.stragglers = phases->stragglers();
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> trained, ReadTrainedVariables(model));
  summary.variables_fingerprint = Fingerprint(trained);
  summary.collective_transport = StrJoin(strategy->extended().CollectiveTransportNames(), "; ");
  summary.train_tokens_per_sec =
      summary.train_images_per_sec * static_cast<double>(workload.tokens_per_example);
  WEFT_RETURN_IF_ERROR(workload.evaluate(model, &summary));
  summary.wall_seconds = SecondsSince(wall_start);
  return summary;
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
