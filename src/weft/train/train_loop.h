// The training loop behind `weft train`: makes the workload the options name (workloads.h: W1 or W2
// on Fashion-MNIST, W6 on the fortunes corpus), compiles its model under the strategy the options
// name and trains it with Model::Fit, the loop any user's model runs (one code path), then judges
// it with Model::Evaluate (test accuracy, or the validation loss of W6). Reports progress through
// callbacks so the CLI decides how to show it. One call at a time per process (it sizes
// process-wide thread pools).
//
// Data-parallel training: with devices > 1 (or a strategy named) the model is built once per
// replica (MirroredStrategy, variables mirrored on every device); each global batch of batch_size
// examples is split evenly between the replicas, the gradients are all-reduced (MEAN) before every
// replica updates its own copy, and the reported loss is the mean of the replicas' losses. With
// strategy "central_storage" the replicas share one copy of each variable on the host's CPU,
// updated there once (CentralStorageStrategy).
//
// Multi-worker training (strategy "multi_worker_mirrored"): every worker process calls Train with
// the same options but its own task in worker_cluster; devices is the devices per worker. Each
// worker draws the same global batches and trains on its share of each, starts from the chief's
// initial values (broadcast once) and all-reduces the gradients with the other workers' replicas;
// the loss it reports is its own replicas' mean; throughput counts the whole global batch.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "weft/distributed/cluster/cluster_spec.h"
#include "weft/train/models.h"
#include "weft/train/step_phase_monitor.h"
#include "weft/train/trace_writer.h"

namespace weft::train {

struct TrainOptions {
  ModelKind model = ModelKind::kMlp;
  int64_t mlp_width = 256;  // the MLP's hidden layers (W1: 256)
  int epochs = 3;
  int64_t max_steps = -1;  // stop after this many steps in all (-1: no limit)
  int batch_size = 128;
  // sgd | momentum | adam | adamw; "": the workload's (workloads.h: momentum for the image
  // models, Adam decayed over the run under parameter_server, W6's AdamW with its schedule and
  // clipping for char_transformer).
  std::string optimizer;
  // 0: the workload's: 1e-3 for char_transformer and Adam; 0.05 for momentum and sgd, or 0.03
  // under parameter_server, whose asynchronous steps apply gradients up to a few steps stale.
  double learning_rate = 0;
  // "constant", "cosine" (to a tenth of the rate over the run), or "": the workload's (cosine for
  // the default Adam under parameter_server, constant otherwise; W6 has its own schedule).
  std::string lr_schedule;
  int steps_per_execution = 1;  // CompileOptions::steps_per_execution
  int64_t seed = 1;
  // The model's dtype policy by the reference's name: "float32" or "mixed_bfloat16".
  std::string dtype_policy = "float32";
  // Empty: the workload's default (Fashion-MNIST's directory; the fortunes corpus for W6).
  std::string data_dir;
  int inter_op_threads = 1;  // 0: one per core; 1 measured best for W1/W2 on 2 cores
  int intra_op_threads = 0;  // 0: one per core (shared out between the devices)
  int devices = 1;           // devices of `device_type`, one replica each
  // The type of the replicas' devices: one Weft's device factories make ("CPU"); with a target, the
  // type of the cluster's devices to train on.
  std::string device_type = "CPU";
  // "" (mirrored when devices > 1, else the plain single-device path), "one_device" (devices
  // must be 1), "mirrored", "central_storage", "multi_worker_mirrored" or "parameter_server"
  // (both need worker_cluster; parameter_server runs in the coordinator, the chief task, and
  // trains asynchronously on every worker task with the variables on the ps tasks).
  std::string strategy;
  // multi_worker_mirrored and parameter_server: the cluster and this process's task in it.
  std::optional<ServerConfig> worker_cluster;
  bool force_tcp_collectives = false;  // TCP between workers even on one host
  // multi_worker_mirrored under `weft launch --elastic`: the membership's "host:port"
  // (WEFT_ELASTIC_MEMBERSHIP). The job then trains on when a worker is lost, in generations of
  // the workers left (and those that join again); worker_cluster is the launch's, its task this
  // worker's index in the launch. "": not elastic.
  std::string elastic_membership;
  // The fewest workers the elastic job trains with (`weft launch --min-workers`): the global batch
  // must split evenly over every member count from this one to the launch's workers.
  int elastic_min_workers = 1;
  // Elastic training: every this many steps each worker also writes its state to RAM
  // (memory_snapshot.h), in "<snapshot_dir>/worker-<i>" ("": under /dev/shm/weft-snapshots, named
  // after the training's options), so that running the same command again after the job failed
  // resumes from RAM. 0: no snapshots.
  int64_t snapshot_every_steps = 0;
  // parameter_server: each step's updates wait on the ps tasks for the coordinator's commit, so a
  // lost worker's step is never applied twice (CompileOptions::exactly_once_input).
  bool exactly_once_input = false;
  // Under parameter_server: every worker reads its own shard of the training data (the data
  // directory's files, from its own disk) instead of the coordinator sending each batch
  // (Model::Fit of per-worker datasets).
  bool per_worker_dataset = false;
  std::string snapshot_dir;
  // multi_worker_mirrored: the type gradients are all-reduced in (bfloat16 halves the bytes).
  DataType all_reduce_dtype = DataType::kFloat;
  std::string hostname;  // this worker's host for the collectives ("": gethostname())
  int64_t collective_timeout_ms = 300000;  // a collective waiting longer fails, naming who is late
  // "grpc://host:port": train on a cluster through its master, one replica on every CPU device of
  // every task (MirroredStrategy, in-graph replication); "" trains in this process.
  std::string target;
  // With a target: the cluster's tasks in the flag form ("worker=h:p,h:p"), sent with the session
  // (servers started on ephemeral ports learn their peers from it); "": the servers' own cluster.
  std::string cluster;
  // With a target: how long the master waits for any worker to answer (a silent worker fails the
  // step and Close, naming it); 0: the server's --worker-timeout-ms.
  int64_t worker_timeout_ms = 0;
  // Leaves the first this many steps of the run out of TrainSummary's training throughput (graph
  // optimisation, first allocations, kernel setup), as bench/torch_*.py leave theirs; all steps
  // count when the run has no more than these.
  int64_t throughput_warmup_steps = 0;
  // Traces this many steps after kStepBreakdownWarmup untraced ones and reports where their time
  // went in TrainSummary::step_breakdown (0: no tracing).
  int64_t step_breakdown_steps = 0;
  // Writes a Chrome trace of the global steps trace_first_step..trace_last_step to trace_path
  // (train/trace_writer.h; "": no trace) and reports each traced step's compute, communication
  // and overlap times in TrainSummary::traced_steps. Multi-worker: each worker traces its own
  // steps; the chief writes trace_path, worker i writes TracePathForTask(trace_path, i).
  std::string trace_path;
  int64_t trace_first_step = kDefaultTraceFirstStep;
  int64_t trace_last_step = kDefaultTraceLastStep;
  // Checkpoints (train_checkpoints.h): "" saves none. When the directory already holds one, the
  // run resumes from it (variables, optimizer slots, global step, input position); max_steps and
  // epochs count from the start of the first run, so a resumed run stops where an uninterrupted
  // one would. Saves every save_every_steps global steps (0: only at the end) and at the end,
  // keeping the newest keep_checkpoints; async_checkpoints writes them in the background.
  // Multi-worker: the chief saves, every worker restores.
  std::string checkpoint_dir;
  int64_t save_every_steps = 0;
  int keep_checkpoints = 3;
  bool async_checkpoints = false;
};

// Steps run before the traced ones of TrainOptions::step_breakdown_steps (first-step costs such
// as building kernels and oneDNN primitives stay out of the breakdown).
inline constexpr int64_t kStepBreakdownWarmup = 10;

struct TrainProgress {
  int epoch = 0;  // 1-based
  int epochs = 0;
  int64_t step_in_epoch = 0;
  int64_t steps_in_epoch = 0;
  int64_t total_steps = 0;  // the global step (counting the steps of a resumed run's past)
  double loss = 0;
  double images_per_sec = 0;  // examples (W6: sequences) over this epoch's steps so far
  double eta_seconds = 0;     // to the end of this epoch
  // Tokens in an example for a text model (W6: its context), whose speed is given in tokens;
  // 0 for the image models.
  int64_t tokens_per_example = 0;
};

struct TrainSummary {
  double test_accuracy = 0;    // the image models
  double validation_loss = 0;  // char_transformer: nats per byte of the held-out windows
  double final_loss = 0;
  double train_images_per_sec = 0;  // examples (sequences for W6); training steps only
  double train_tokens_per_sec = 0;  // examples times their tokens (1 for an image)
  int64_t steps = 0;
  int replicas = 1;  // of every worker
  int workers = 1;
  int worker_index = 0;  // this worker's, of `workers`
  int ps_tasks = 0;      // parameter_server: the ps tasks holding the variables
  // parameter_server: steps rerun on another worker because theirs was lost, and lost workers
  // that came back and took steps again.
  int64_t rescheduled_steps = 0;
  int64_t worker_recoveries = 0;
  // parameter_server with per_worker_dataset: datasets made again on workers that came back.
  int64_t per_worker_datasets_rebuilt = 0;
  // parameter_server: ps tasks restored from the snapshot after a restart, and the steps whose
  // updates they lost.
  int64_t ps_recoveries = 0;
  int64_t steps_lost = 0;
  // parameter_server with exactly_once_input: steps whose input was leased again after their
  // worker was lost (run twice, applied once), and commits that failed (a ps task lost).
  bool exactly_once = false;
  int64_t input_shards_reissued = 0;
  int64_t lost_commits = 0;
  double wall_seconds = 0;
  // A hash of every local replica's trained variables: the same on every worker of a
  // multi-worker job exactly when all replicas ended bitwise identical.
  uint64_t variables_fingerprint = 0;
  // Multi-worker: how the collectives reached the other workers ("shared memory", "TCP", ...).
  std::string collective_transport;
  // Multi-worker: every worker's mean step phases after the first steps, by worker index (the
  // same on every worker), and the workers named as stragglers (step_phase_monitor.h).
  std::vector<StepPhases> worker_step_phases;
  std::vector<Straggler> stragglers;
  // Elastic training: the generations this worker trained in, the job's membership changes (each
  // worker that left or joined, up to this worker's last generation), the steps run again after
  // failures, the longest time from the loss of a worker to the next completed step, and the
  // longest this worker took to receive the state when it joined a running job (0: it did not).
  bool elastic = false;
  int64_t generations = 0;
  int64_t membership_changes = 0;
  int64_t steps_recomputed = 0;
  double elastic_recovery_seconds = 0;
  double elastic_heal_seconds = 0;
  // The job ended before this (restarted) worker could join: it trained nothing.
  bool finished_before_joining = false;
  // With TrainOptions::step_breakdown_steps: the traced steps' breakdown, a table per device.
  std::string step_breakdown;
  // With TrainOptions::trace_path: the file written and the steps it holds.
  std::string trace_file;
  std::vector<TracedStepTimes> traced_steps;
  // With TrainOptions::checkpoint_dir: the global step the run resumed from (-1: started
  // afresh), the checkpoints this process saved, and the longest a save held training up.
  int64_t resumed_from_step = -1;
  int64_t checkpoints_saved = 0;
  double max_save_stall_seconds = 0;
};

struct TrainCallbacks {
  std::function<void(const TrainProgress&)> on_step;       // after every step
  std::function<void(const TrainProgress&)> on_epoch_end;  // after each epoch
  // With checkpoints: one line per resume, save and failed save.
  std::function<void(const std::string&)> on_checkpoint;
  // Multi-worker: one line each time a worker is named as a straggler.
  std::function<void(const std::string&)> on_straggler;
  // Elastic training: one line per generation joined and ended.
  std::function<void(const std::string&)> on_membership;
};

StatusOr<TrainSummary> Train(const TrainOptions& options, const TrainCallbacks& callbacks = {});

// Where worker `task_index` of a multi-worker job writes its trace: `path` for the chief,
// "trace.task1.json" for "trace.json" (".task1" appended when `path` has no ".json").
std::string TracePathForTask(const std::string& path, int task_index);

}  // namespace weft::train
