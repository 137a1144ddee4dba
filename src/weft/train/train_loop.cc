#include "weft/train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "weft/core/str_util.h"
#include "weft/distribute/multi_worker_mirrored_strategy.h"
#include "weft/distribute/strategy.h"
#include "weft/distributed/cluster_spec.h"
#include "weft/runtime/cpu_device.h"
#include "weft/runtime/session.h"
#include "weft/runtime/step_breakdown.h"
#include "weft/runtime/step_stats_collector.h"
#include "weft/train/data/batch_iterator.h"
#include "weft/train/data/fashion_mnist.h"
#include "weft/train/optimizer.h"
#include "weft/train/train_checkpoints.h"
#include "weft/train/train_graph.h"

namespace weft::train {
namespace {

using internal::BuildPlainGraph;
using internal::BuildReplicatedGraph;
using internal::TrainGraph;

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Counts the test examples the model classifies correctly, in large batches.
StatusOr<double> Evaluate(Session& session, const BuiltModel& model, const Dataset& test) {
  BatchOptions batches;
  batches.batch_size = 1000;
  batches.shuffle = false;
  batches.drop_remainder = false;
  WEFT_ASSIGN_OR_RETURN(BatchIterator iterator, BatchIterator::Create(test, batches));
  iterator.StartEpoch(0);
  Tensor images, labels;
  int64_t correct = 0;
  std::vector<Tensor> outputs;
  while (iterator.Next(&images, &labels)) {
    WEFT_RETURN_IF_ERROR(session.Run({{model.images.name(), images}, {model.labels.name(), labels}},
                                     {model.correct.name()}, {}, &outputs));
    correct += *outputs[0].data<int64_t>();
  }
  return static_cast<double>(correct) / static_cast<double>(test.NumExamples());
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

// The session's options: in-process devices, or the cluster behind options.target.
StatusOr<SessionOptions> MakeSessionOptions(const TrainOptions& options, int replicas) {
  SessionOptions session_options;
  session_options.target = options.target;
  int inter_op_threads = options.inter_op_threads;
  // The partitions of a replicated step run at once, and a partition woken by another (a _Recv,
  // a collective) continues on an inter-op thread: one per replica. Measured with W1 on 2 devices
  // (2 cores): 1 inter-op thread ~40k images/s, 2 threads ~63k, 3 threads ~61k.
  if (replicas > 1 && inter_op_threads > 0) inter_op_threads = std::max(inter_op_threads, replicas);
  session_options.config.set_inter_op_parallelism_threads(inter_op_threads);
  session_options.config.set_intra_op_parallelism_threads(options.intra_op_threads);
  if (!options.target.empty()) {
    session_options.config.set_worker_timeout_in_ms(options.worker_timeout_ms);
  }
  if (options.target.empty()) {
    (*session_options.config.mutable_device_count())["CPU"] = replicas;
  } else if (!options.cluster.empty()) {
    StatusOr<ClusterSpec> cluster = ClusterSpec::FromFlag(options.cluster);
    if (!cluster.ok()) return cluster.status().WithContext("cluster");
    *session_options.config.mutable_cluster_def() = cluster->ToProto();
  }
  return session_options;
}

// The CPU devices a cluster session can place on, the master's task first.
StatusOr<std::vector<std::string>> ClusterCpuDevices(Session& session) {
  std::vector<proto::DeviceAttributes> attributes;
  WEFT_RETURN_IF_ERROR(session.ListDevices(&attributes));
  std::vector<std::string> devices;
  for (const proto::DeviceAttributes& device : attributes) {
    if (device.device_type() == "CPU") devices.push_back(device.name());
  }
  if (devices.empty()) return FailedPrecondition("the cluster has no CPU devices");
  return devices;
}

}  // namespace

StatusOr<TrainSummary> Train(const TrainOptions& options, const TrainCallbacks& callbacks) {
  auto wall_start = Clock::now();
  if (options.batch_size <= 0) {
    return InvalidArgument("batch size must be positive, got ", options.batch_size);
  }
  if (options.epochs <= 0) return InvalidArgument("epochs must be positive, got ", options.epochs);
  if (options.devices < 1) {
    return InvalidArgument("devices must be at least 1, got ", options.devices);
  }
  const bool multi_worker = options.strategy == "multi_worker_mirrored";
  if (!options.strategy.empty() && options.strategy != "one_device" &&
      options.strategy != "mirrored" && !multi_worker) {
    return InvalidArgument("unknown strategy '", options.strategy,
                           "' (expected one_device, mirrored or multi_worker_mirrored)");
  }
  if (multi_worker && !options.target.empty()) {
    return InvalidArgument("strategy multi_worker_mirrored runs in every worker process; it takes ",
                           "no target (drop --target ", options.target, ")");
  }
  int workers = 1;
  int task_index = 0;
  if (multi_worker && options.worker_cluster.has_value()) {
    const TaskId& task = options.worker_cluster->task;
    workers = options.worker_cluster->cluster.NumTasks(task.job);
    task_index = task.index;
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
  WEFT_ASSIGN_OR_RETURN(
      FashionMnist data,
      LoadFashionMnist(options.data_dir.empty() ? kDefaultFashionMnistDir : options.data_dir));

  // On a cluster the session comes first: its devices decide the replicas.
  std::unique_ptr<Session> session;
  std::vector<std::string> devices;
  if (options.target.empty()) {
    for (int i = 0; i < options.devices; ++i) devices.push_back(StrCat("/cpu:", i));
  } else {
    WEFT_ASSIGN_OR_RETURN(SessionOptions session_options, MakeSessionOptions(options, 1));
    WEFT_ASSIGN_OR_RETURN(session, NewSession(session_options));
    WEFT_ASSIGN_OR_RETURN(devices, ClusterCpuDevices(*session));
  }
  const int replicas = static_cast<int>(devices.size());
  if (options.batch_size % replicas != 0) {
    return InvalidArgument("the global batch size ", options.batch_size,
                           " is not divisible by the cluster's ", replicas, " CPU devices");
  }
  const bool replicated = replicas > 1 || !options.strategy.empty() || !options.target.empty();
  if (options.save_every_steps < 0) {
    return InvalidArgument("save every steps must be 0 (only at the end) or positive, got ",
                           options.save_every_steps);
  }
  WEFT_ASSIGN_OR_RETURN(TrainGraph graph, replicated
                                              ? BuildReplicatedGraph(options, devices, callbacks)
                                              : BuildPlainGraph(options, callbacks));
  if (session == nullptr) {
    WEFT_ASSIGN_OR_RETURN(SessionOptions session_options, MakeSessionOptions(options, replicas));
    if (graph.multi_worker != nullptr) {
      const SessionOptions worker = graph.multi_worker->session_options();
      session_options.collective_executor_mgr = worker.collective_executor_mgr;
      session_options.config.set_intra_op_parallelism_threads(
          worker.config.intra_op_parallelism_threads());
    }
    WEFT_ASSIGN_OR_RETURN(session, NewSession(session_options));
  }
  // Closed before the strategy (declared in `graph`, so destroyed after the session) goes away.
  struct CloseSession {
    Session* session;
    ~CloseSession() { session->Close().IgnoreError(); }
  } close_session{session.get()};
  WEFT_RETURN_IF_ERROR(session->Create(graph.graph));
  std::vector<Tensor> outputs;
  // A checkpoint, when there is one, replaces the initial values (on every worker alike).
  TrainPosition position;
  position.shuffle_seed = options.seed;
  std::optional<TrainPosition> resumed;
  if (graph.checkpoints != nullptr) {
    WEFT_ASSIGN_OR_RETURN(resumed, graph.checkpoints->RestoreLatest(*session));
  }
  if (resumed.has_value()) {
    position = *resumed;
  } else {
    WEFT_RETURN_IF_ERROR(session->Run({}, {}, {graph.init}, &outputs));
    if (!graph.broadcast.empty()) {
      WEFT_RETURN_IF_ERROR(session->Run({}, {}, {graph.broadcast}, &outputs));
    }
  }

  if (graph.checkpoints != nullptr) WEFT_RETURN_IF_ERROR(graph.checkpoints->Prepare(*session));

  BatchOptions batches;
  batches.batch_size = options.batch_size;
  batches.seed = static_cast<uint64_t>(position.shuffle_seed);
  batches.num_shards = workers;
  batches.shard_index = task_index;
  WEFT_ASSIGN_OR_RETURN(BatchIterator iterator, BatchIterator::Create(data.train, batches));

  TrainSummary summary;
  summary.steps = position.global_step;
  summary.resumed_from_step = resumed.has_value() ? resumed->global_step : -1;
  summary.replicas = replicas * workers;
  summary.workers = workers;
  summary.task_index = task_index;
  double training_seconds = 0;
  int64_t trained_images = 0;
  // Each replica's loss; with several workers, every kGlobalLossEvery steps and at the end of
  // each epoch the loss over every worker's replicas instead (one more collective: worth it only
  // when the loss is shown). Every worker decides from the step count alone, so all of them run
  // that collective in the same steps.
  constexpr int64_t kGlobalLossEvery = 10;
  std::vector<std::string> fetches;
  for (const BuiltModel& model : graph.replicas) fetches.push_back(model.loss.name());
  const std::vector<std::string> global_fetches = {graph.global_loss};
  std::vector<std::pair<std::string, Tensor>> feeds(2 * replicas);
  for (int r = 0; r < replicas; ++r) {
    feeds[2 * r].first = graph.replicas[r].images.name();
    feeds[2 * r + 1].first = graph.replicas[r].labels.name();
  }
  // With a strategy, each global batch reaches the replicas through the distributed dataset.
  std::optional<distribute::DistributedDataset> distributed;
  if (graph.strategy != nullptr) {
    distributed.emplace(graph.strategy->ExperimentalDistributeDataset(
        [&iterator](std::vector<Tensor>* batch) -> StatusOr<bool> {
          Tensor images, labels;
          if (!iterator.Next(&images, &labels)) return false;
          *batch = {std::move(images), std::move(labels)};
          return true;
        }));
  }
  std::vector<std::vector<Tensor>> per_replica;
  StepBreakdown breakdown;
  proto::RunOptions trace_options;
  trace_options.set_trace_level(proto::RunOptions::FULL_TRACE);
  int64_t run_steps = 0;  // steps of this run (the global step counts earlier runs' too)
  bool stop = options.max_steps >= 0 && summary.steps >= options.max_steps;
  for (int64_t epoch = position.epoch; epoch < options.epochs && !stop; ++epoch) {
    iterator.StartEpoch(epoch);
    TrainProgress progress;
    progress.epoch = static_cast<int>(epoch) + 1;
    progress.epochs = options.epochs;
    progress.steps_in_epoch = iterator.NumBatches();
    if (epoch == position.epoch && position.batch_index > 0) {
      iterator.SkipBatches(position.batch_index);
      progress.step_in_epoch = std::min(position.batch_index, progress.steps_in_epoch);
    }
    double epoch_seconds = 0;
    int64_t epoch_images = 0;
    Tensor images, labels;
    while (!stop) {
      auto step_start = Clock::now();
      int64_t batch = 0;
      if (!distributed) {
        if (!iterator.Next(&images, &labels)) break;
        batch = images.dim_size(0);
        feeds[0].second = images;
        feeds[1].second = labels;
      } else {
        WEFT_ASSIGN_OR_RETURN(bool more, distributed->Next(&per_replica));
        if (!more) break;
        batch = options.batch_size;  // every worker's share
        for (int r = 0; r < replicas; ++r) {
          feeds[2 * r].second = std::move(per_replica[r][0]);
          feeds[2 * r + 1].second = std::move(per_replica[r][1]);
        }
      }
      const bool global = !graph.global_loss.empty() &&
                          ((summary.steps + 1) % kGlobalLossEvery == 0 ||
                           progress.step_in_epoch + 1 == progress.steps_in_epoch ||
                           (options.max_steps >= 0 && summary.steps + 1 >= options.max_steps));
      const bool traced = run_steps >= kStepBreakdownWarmup &&
                          run_steps < kStepBreakdownWarmup + options.step_breakdown_steps;
      if (traced) {
        proto::RunMetadata metadata;
        const int64_t run_start = StepStatsNowNanos();
        WEFT_RETURN_IF_ERROR(session->Run(trace_options, feeds, global ? global_fetches : fetches,
                                          graph.targets, &outputs, &metadata));
        breakdown.AddStep(metadata.step_stats(), run_start, StepStatsNowNanos());
      } else {
        WEFT_RETURN_IF_ERROR(
            session->Run(feeds, global ? global_fetches : fetches, graph.targets, &outputs));
      }
      double seconds = SecondsSince(step_start);
      epoch_seconds += seconds;
      epoch_images += batch;
      double loss = 0;
      for (const Tensor& replica_loss : outputs) loss += *replica_loss.data<float>();
      summary.final_loss = outputs.size() == 1 ? *outputs[0].data<float>() : loss / outputs.size();
      ++summary.steps;
      ++run_steps;
      ++progress.step_in_epoch;
      progress.total_steps = summary.steps;
      progress.loss = summary.final_loss;
      progress.images_per_sec = epoch_images / std::max(epoch_seconds, 1e-9);
      progress.eta_seconds = (progress.steps_in_epoch - progress.step_in_epoch) *
                             (epoch_seconds / static_cast<double>(progress.step_in_epoch));
      if (callbacks.on_step) callbacks.on_step(progress);
      stop = options.max_steps >= 0 && summary.steps >= options.max_steps;
      position.global_step = summary.steps;
      position.epoch = epoch;
      position.batch_index = progress.step_in_epoch;
      if (progress.step_in_epoch >= progress.steps_in_epoch) {
        position.epoch = epoch + 1;
        position.batch_index = 0;
      }
      if (graph.checkpoints != nullptr) {
        graph.checkpoints->RecordStep(seconds);
        WEFT_RETURN_IF_ERROR(graph.checkpoints->AfterStep(*session, position, /*final=*/false));
      }
    }
    training_seconds += epoch_seconds;
    trained_images += epoch_images;
    if (callbacks.on_epoch_end) callbacks.on_epoch_end(progress);
  }
  if (graph.checkpoints != nullptr) {
    WEFT_RETURN_IF_ERROR(graph.checkpoints->AfterStep(*session, position, /*final=*/true));
    WEFT_RETURN_IF_ERROR(graph.checkpoints->Finish());
    summary.checkpoints_saved = graph.checkpoints->saves();
    summary.max_save_stall_seconds = graph.checkpoints->max_stall_seconds();
  }
  summary.train_images_per_sec = trained_images / std::max(training_seconds, 1e-9);
  if (breakdown.steps() > 0) summary.step_breakdown = breakdown.ToString();
  WEFT_RETURN_IF_ERROR(session->Run({}, graph.variable_reads, {}, &outputs));
  summary.variables_fingerprint = Fingerprint(outputs);
  if (graph.multi_worker != nullptr) {
    summary.collective_transport =
        StrJoin(graph.multi_worker->collectives().TransportNames(), "; ");
  }
  WEFT_ASSIGN_OR_RETURN(summary.test_accuracy, Evaluate(*session, graph.replicas[0], data.test));
  summary.wall_seconds = SecondsSince(wall_start);
  return summary;
}

}  // namespace weft::train
