// `weft train`: the CLI11 flags, the progress display and the JSON summary around train::Train.
#include "weft/cli/train_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "weft/cli/launch_command.h"
#include "weft/cli/metrics_endpoint.h"
#include "weft/cli/train_summary.h"
#include "weft/cli/worker_cluster.h"
#include "weft/core/str_util.h"
#include "weft/data/fashion_mnist.h"
#include "weft/data/text.h"
#include "weft/train/train_loop.h"

namespace weft::cli {
namespace {

std::string FormatSeconds(double seconds) {
  int total = static_cast<int>(std::lround(seconds));
  char text[32];
  std::snprintf(text, sizeof(text), "%d:%02d", total / 60, total % 60);
  return text;
}

// "123 images/s", or for a text model "4567 tokens/s".
std::string Speed(const train::TrainProgress& progress) {
  if (progress.tokens_per_example > 0) {
    return StrCat(static_cast<int64_t>(progress.images_per_sec *
                                       static_cast<double>(progress.tokens_per_example)),
                  " tokens/s");
  }
  return StrCat(static_cast<int64_t>(progress.images_per_sec), " images/s");
}

// Redraws one line: [=====>     ] step/steps loss images/s ETA.
void DrawProgressBar(const train::TrainProgress& progress, bool final) {
  constexpr int kWidth = 30;
  double fraction = progress.steps_in_epoch > 0
                        ? static_cast<double>(progress.step_in_epoch) / progress.steps_in_epoch
                        : 1.0;
  int filled = static_cast<int>(fraction * kWidth);
  std::string bar(filled, '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  std::fprintf(stdout, "\repoch %d/%d [%s] %lld/%lld loss %.4f  %s  ETA %s   ", progress.epoch,
               progress.epochs, bar.c_str(), static_cast<long long>(progress.step_in_epoch),
               static_cast<long long>(progress.steps_in_epoch), progress.loss,
               Speed(progress).c_str(), FormatSeconds(progress.eta_seconds).c_str());
  if (final) std::fputc('\n', stdout);
  std::fflush(stdout);
}

void PrintEpochLine(const train::TrainProgress& progress) {
  std::fprintf(stdout, "epoch %d/%d: %lld steps, loss %.4f, %s\n", progress.epoch, progress.epochs,
               static_cast<long long>(progress.step_in_epoch), progress.loss,
               Speed(progress).c_str());
  std::fflush(stdout);
}

void AddTrainingFlags(CLI::App* command, TrainFlags& flags) {
  command
      ->add_option("--model", flags.model,
                   "Model to train: mlp or cnn on Fashion-MNIST, char_transformer on the fortunes "
                   "corpus (workload W6)")
      ->check(CLI::IsMember({"mlp", "cnn", "char_transformer"}))
      ->capture_default_str();
  command
      ->add_option("--mlp-width", flags.mlp_width,
                   "The MLP's hidden layers' width (W1: 256; wider makes a larger model)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  command
      ->add_option("--epochs", flags.epochs,
                   "Passes over the training set (default 3; char_transformer: 1, an epoch being "
                   "W6's 2,000 steps)")
      ->check(CLI::PositiveNumber)
      ->each([&flags](const std::string&) { flags.epochs_given = true; });
  command->add_option("--max-steps", flags.max_steps, "Stop after this many steps (-1: no limit)")
      ->capture_default_str();
  command
      ->add_option("--batch-size", flags.batch_size,
                   "Examples per step (default 128; char_transformer: 32 sequences)")
      ->check(CLI::PositiveNumber)
      ->each([&flags](const std::string&) { flags.batch_size_given = true; });
  command->add_option("--optimizer", flags.optimizer, "Update rule")
      ->check(CLI::IsMember({"sgd", "momentum", "adam", "adamw"}))
      ->default_str(
          "momentum; adam with --strategy parameter_server, whose asynchronous steps apply "
          "stale gradients; char_transformer: adamw with W6's schedule and clipping");
  command
      ->add_option("--lr-schedule", flags.lr_schedule,
                   "The learning rate over the run: constant, or cosine (decayed to a tenth by "
                   "the last step)")
      ->check(CLI::IsMember({"constant", "cosine"}))
      ->default_str("cosine for the default adam of --strategy parameter_server, else constant");
  command
      ->add_option("--lr", flags.learning_rate,
                   "Learning rate (default 0.05 for momentum and sgd, 0.03 for momentum under "
                   "--strategy parameter_server, 1e-3 for adam; char_transformer: the peak, 1e-3)")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--steps-per-execution", flags.steps_per_execution,
                   "Training steps per run of the session: batches fed together to a graph "
                   "of that many steps in a row (pays a run's fixed cost once for them)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--seed", flags.seed, "Seed of initial weights and shuffling")
      ->capture_default_str();
  command
      ->add_option("--precision", flags.precision,
                   "fp32, or bf16: the mixed_bfloat16 policy (variables, optimizer state and "
                   "losses in float32, the layers' matrix products in bfloat16)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  command
      ->add_option("--all-reduce-precision", flags.all_reduce_precision,
                   "With --strategy multi_worker_mirrored: the type gradients are all-reduced in "
                   "between workers (bf16 halves the bytes)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  command
      ->add_option("--data", flags.data_dir,
                   "Fashion-MNIST directory (IDX files); char_transformer: a directory of text "
                   "files (" +
                       std::string(data::kDefaultFortunesDir) + ")")
      ->default_str(data::kDefaultFashionMnistDir);
}

void AddThreadFlags(CLI::App* command, TrainFlags& flags) {
  command->add_option("--threads", flags.threads, "Threads per pool (0: one per core)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--inter-op-threads", flags.inter_op_threads,
                   "Threads running independent nodes (default: --threads, else 1)")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--intra-op-threads", flags.intra_op_threads,
                   "Threads inside one kernel, OpenBLAS included (default: --threads)")
      ->check(CLI::NonNegativeNumber);
}

void AddDistributionFlags(CLI::App* command, TrainFlags& flags) {
  command
      ->add_option("--strategy", flags.strategy,
                   "Distribution strategy (default: mirrored with --devices > 1)")
      ->check(CLI::IsMember({"one_device", "mirrored", "central_storage", "multi_worker_mirrored",
                             "parameter_server"}));
  command
      ->add_option("--devices", flags.devices,
                   "Devices, one replica each; the global batch is split between them")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->each([&flags](const std::string&) { flags.devices_given = true; })
      // The README's command passes --devices 2 before the user's flags: the last one wins.
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  command
      ->add_option("--device-type", flags.device_type,
                   "Type of the replicas' devices (with --target: of the cluster's devices)")
      ->capture_default_str();
  command->add_option("--target", flags.target,
                      "Train on a cluster through this master (grpc://HOST:PORT), one replica on "
                      "every device of --device-type of every task");
  command->add_option("--cluster", flags.cluster,
                      "With --target: the cluster's tasks (\"worker=h:p,h:p\"), for servers that "
                      "were started on ephemeral ports");
  command
      ->add_option("--worker-timeout-ms", flags.worker_timeout_ms,
                   "With --target: how long the master waits for any worker to answer before "
                   "failing the step or call, naming the worker (0: the server's "
                   "--worker-timeout-ms, default 30000)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--coordinator", flags.coordinator,
                      "multi_worker_mirrored under Slurm or Open MPI: HOST:PORT where the ranks "
                      "meet to learn each other's addresses (default: WEFT_COORDINATOR)");
  command
      ->add_option("--snapshot-every-steps", flags.snapshot_every_steps,
                   "Under weft launch --elastic: every this many steps each worker also keeps "
                   "its state in RAM (/dev/shm), from which the same command run again after the "
                   "job failed resumes (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_flag("--exactly-once", flags.exactly_once,
                    "With --strategy parameter_server: each step's updates wait on the ps tasks "
                    "until the coordinator commits the step, so a step whose worker died is "
                    "discarded and run again, never applied twice: every batch of an epoch is "
                    "applied exactly once");
  command->add_flag("--per-worker-dataset", flags.per_worker_dataset,
                    "With --strategy parameter_server: every worker reads its own shard of the "
                    "training data from the data directory's files on its own disk, instead of "
                    "this process sending each batch; a worker that returns after it was lost "
                    "starts its shard over");
  command->add_option("--snapshot-dir", flags.snapshot_dir,
                      "With --snapshot-every-steps: where (a tmpfs directory) the workers keep "
                      "their snapshots (default: under /dev/shm/weft-snapshots, named after the "
                      "training)");
  command->add_flag(
      "--force-tcp", flags.force_tcp,
      "multi_worker_mirrored: collectives over TCP even between processes of one host "
      "(default: shared memory there)");
  command
      ->add_option("--collective-timeout-ms", flags.collective_timeout_ms,
                   "multi_worker_mirrored: a collective waiting longer than this for the other "
                   "workers fails, naming those that never arrived")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

void AddTracingFlags(CLI::App* command, TrainFlags& flags) {
  command
      ->add_option("--throughput-warmup-steps", flags.throughput_warmup_steps,
                   "Leave the run's first this many steps (graph optimisation, first "
                   "allocations) out of the reported training throughput, as the peers' "
                   "benchmark scripts do")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--step-breakdown", flags.step_breakdown,
                   "Trace this many steps (after 10 untraced ones) and print on stderr where "
                   "their time went: per device, each op type's time per step and the time no "
                   "op ran (traced steps run a little slower)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option(
      "--trace", flags.trace,
      "Write a Chrome trace (Perfetto, chrome://tracing) of the --trace-steps "
      "steps to this file: every op of every device of every task, transfers and "
      "collectives; the --json summary gains their compute and communication times");
  command->add_option("--trace-steps", flags.trace_steps,
                      "With --trace: the global steps to trace, FIRST:LAST (default 11:15)");
  command
      ->add_option("--metrics-port", flags.metrics_port,
                   "Serve this process's Prometheus metrics at http://127.0.0.1:PORT/metrics "
                   "while it trains (0: a free port): every worker's step phases, collectives, "
                   "transfers")
      ->check(CLI::Range(0, 65535));
}

void AddCheckpointFlags(CLI::App* command, TrainFlags& flags) {
  command->add_option("--checkpoint-dir", flags.checkpoint_dir,
                      "Save checkpoints here (ckpt-<step>, checkpoint.json); when it already "
                      "holds one, resume from it");
  command
      ->add_option("--save-every-steps", flags.save_every_steps,
                   "With --checkpoint-dir: save every N global steps (0: only at the end)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--keep", flags.keep, "With --checkpoint-dir: checkpoints to keep")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_flag("--async-save", flags.async_save,
                    "With --checkpoint-dir: write checkpoints in the background (the variables "
                    "are snapshotted at the step boundary; the last save is synchronous)");
}

// The flags as train::TrainOptions, but for the worker cluster and the thread pools; false, after
// saying why on stderr, for a bad flag or combination.
bool OptionsFromFlags(const TrainFlags& flags, train::TrainOptions* options) {
  StatusOr<train::ModelKind> model = train::ParseModelKind(flags.model);
  if (!model.ok()) {
    std::fprintf(stderr, "weft train: %s\n", model.status().message().c_str());
    return false;
  }
  options->model = *model;
  const bool text = *model == train::ModelKind::kCharTransformer;
  options->epochs = text && !flags.epochs_given ? 1 : flags.epochs;
  options->max_steps = flags.max_steps;
  options->batch_size = text && !flags.batch_size_given ? 32 : flags.batch_size;
  options->optimizer = flags.optimizer;
  options->lr_schedule = flags.lr_schedule;
  options->learning_rate = flags.learning_rate;
  options->steps_per_execution = flags.steps_per_execution;
  options->seed = flags.seed;
  options->dtype_policy = flags.precision == "bf16" ? "mixed_bfloat16" : "float32";
  if (flags.all_reduce_precision == "bf16") {
    if (flags.strategy != "multi_worker_mirrored") {
      std::fprintf(stderr,
                   "weft train: --all-reduce-precision bf16 applies to --strategy "
                   "multi_worker_mirrored (the gradients between workers), not to %s\n",
                   flags.strategy.empty() ? "training in one process" : flags.strategy.c_str());
      return false;
    }
    options->all_reduce_dtype = DataType::kBFloat16;
  }
  options->data_dir = flags.data_dir;
  options->mlp_width = flags.mlp_width;
  options->snapshot_every_steps = flags.snapshot_every_steps;
  options->exactly_once_input = flags.exactly_once;
  options->per_worker_dataset = flags.per_worker_dataset;
  options->snapshot_dir = flags.snapshot_dir;
  options->strategy = flags.strategy;
  options->devices = flags.devices;
  options->device_type = flags.device_type;
  options->target = flags.target;
  options->cluster = flags.cluster;
  options->worker_timeout_ms = flags.worker_timeout_ms;
  options->force_tcp_collectives = flags.force_tcp;
  // The host to advertise (as for Slurm and Open MPI ranks): workers naming one host share memory.
  if (const char* host = std::getenv("WEFT_HOST"); host != nullptr) options->hostname = host;
  options->collective_timeout_ms = flags.collective_timeout_ms;
  options->step_breakdown_steps = flags.step_breakdown;
  options->throughput_warmup_steps = flags.throughput_warmup_steps;
  if (!flags.trace_steps.empty()) {
    if (flags.trace.empty()) {
      std::fprintf(stderr, "weft train: --trace-steps %s needs --trace FILE\n",
                   flags.trace_steps.c_str());
      return false;
    }
    StatusOr<std::pair<int64_t, int64_t>> steps = train::ParseTraceSteps(flags.trace_steps);
    if (!steps.ok()) {
      std::fprintf(stderr, "weft train: %s\n", steps.status().message().c_str());
      return false;
    }
    std::tie(options->trace_first_step, options->trace_last_step) = *steps;
  }
  options->trace_path = flags.trace;
  options->checkpoint_dir = flags.checkpoint_dir;
  options->save_every_steps = flags.save_every_steps;
  options->keep_checkpoints = flags.keep;
  options->async_checkpoints = flags.async_save;
  if (options->checkpoint_dir.empty() && (flags.save_every_steps > 0 || flags.async_save)) {
    std::fprintf(stderr, "weft train: --save-every-steps and --async-save need --checkpoint-dir\n");
    return false;
  }
  return true;
}

// Resolves the cluster of a multi-worker job into *worker_cluster and `options`; false, after
// saying why on stderr, when it cannot.
bool JoinWorkerCluster(const TrainFlags& flags, WorkerCluster* worker_cluster,
                       train::TrainOptions* options) {
  StatusOr<WorkerCluster> resolved =
      ResolveWorkerCluster(flags.coordinator, flags.collective_timeout_ms, "weft train");
  if (!resolved.ok()) {
    std::fprintf(stderr, "weft train: %s\n", resolved.status().ToString().c_str());
    return false;
  }
  *worker_cluster = std::move(resolved).value();
  options->worker_cluster = worker_cluster->config;
  if (!flags.devices_given && worker_cluster->devices_per_worker > 0) {
    options->devices = worker_cluster->devices_per_worker;
  }
  return true;
}

void SetThreadPools(const TrainFlags& flags, train::TrainOptions* options) {
  // One inter-op thread by default: a training step is a chain of kernels that are each
  // parallel inside, and a second inter-op pool beside the intra-op and OpenBLAS threads
  // oversubscribes the cores (measured on the 2-core machine: ~55k vs ~86k images/s for W1).
  options->inter_op_threads = flags.inter_op_threads >= 0 ? flags.inter_op_threads
                              : flags.threads > 0         ? flags.threads
                                                          : 1;
  options->intra_op_threads = flags.intra_op_threads >= 0 ? flags.intra_op_threads : flags.threads;
}

// The progress display: a progress bar on a terminal, else a line per epoch; a line per
// checkpoint; and for a worker of a multi-worker job, a line at its first step.
train::TrainCallbacks DisplayCallbacks(const train::TrainOptions& options, bool terminal) {
  train::TrainCallbacks callbacks;
  if (terminal) {
    callbacks.on_step = [](const train::TrainProgress& p) {
      if (p.step_in_epoch % 10 == 0) DrawProgressBar(p, false);
    };
    callbacks.on_epoch_end = [](const train::TrainProgress& p) { DrawProgressBar(p, true); };
  } else {
    callbacks.on_epoch_end = PrintEpochLine;
  }
  callbacks.on_checkpoint = [terminal](const std::string& line) {
    std::fprintf(stdout, "%sweft train: %s\n", terminal ? "\n" : "", line.c_str());
    std::fflush(stdout);
  };
  if (options.worker_cluster.has_value() && options.strategy == "multi_worker_mirrored") {
    callbacks.on_straggler = [terminal](const std::string& line) {
      std::fprintf(stderr, "%sweft train: %s\n", terminal ? "\n" : "", line.c_str());
    };
    callbacks.on_membership = callbacks.on_straggler;
    // One line once the workers have met and stepped together (tests and launchers wait for it).
    auto user_on_step = callbacks.on_step;
    callbacks.on_step = [user_on_step, task = options.worker_cluster->task.index,
                         workers = options.worker_cluster->cluster.NumTasks(
                             options.worker_cluster->task.job)](const train::TrainProgress& p) {
      if (p.total_steps == 1) {
        std::fprintf(stderr, "weft train: worker %d of %d took its first step\n", task, workers);
      }
      if (user_on_step) user_on_step(p);
    };
  } else if (options.strategy == "parameter_server" || !options.target.empty()) {
    // One line once the workers' steps run (tests wait for it before stopping a worker).
    auto user_on_step = callbacks.on_step;
    callbacks.on_step = [user_on_step](const train::TrainProgress& p) {
      if (p.total_steps == 1) std::fprintf(stderr, "weft train: the first step finished\n");
      if (user_on_step) user_on_step(p);
    };
  }
  return callbacks;
}

// Prints what the run did (on stdout; the step breakdown and the trace's file on stderr); returns
// the exit code.
int ReportSummary(const TrainFlags& flags, const train::TrainOptions& options,
                  const train::TrainSummary& summary) {
  if (!summary.step_breakdown.empty()) std::fputs(summary.step_breakdown.c_str(), stderr);
  if (!summary.trace_file.empty()) {
    std::fprintf(stderr, "weft train: wrote a trace of %zu steps to %s\n",
                 summary.traced_steps.size(), summary.trace_file.c_str());
  }
  char fingerprint[17];
  std::snprintf(fingerprint, sizeof(fingerprint), "%016llx",
                static_cast<unsigned long long>(summary.variables_fingerprint));
  // An elastic job's workers each report in full: any of them may have been lost on the way.
  if (summary.worker_index != 0 && !summary.elastic) {
    // The chief reports the job; every other worker says in one line that it finished.
    std::fprintf(stdout, "worker %d of %d done: %lld steps, final loss %.4f, variables %s\n",
                 summary.worker_index, summary.workers, static_cast<long long>(summary.steps),
                 summary.final_loss, fingerprint);
    return 0;
  }
  if (options.model == train::ModelKind::kCharTransformer) {
    std::fprintf(stdout,
                 "validation loss %.4f nats/byte, final loss %.4f, %.0f training tokens/s, %lld "
                 "steps\n",
                 summary.validation_loss, summary.final_loss, summary.train_tokens_per_sec,
                 static_cast<long long>(summary.steps));
  } else {
    std::fprintf(stdout,
                 "test accuracy %.4f, final loss %.4f, %.0f training images/s, %lld steps\n",
                 summary.test_accuracy, summary.final_loss, summary.train_images_per_sec,
                 static_cast<long long>(summary.steps));
  }
  if (flags.json) {
    std::fprintf(stdout, "%s\n", SummaryJson(flags, options, summary, fingerprint).dump().c_str());
  }
  return 0;
}

}  // namespace

CLI::App* AddTrainCommand(CLI::App& app, TrainFlags& flags) {
  CLI::App* train = app.add_subcommand(
      "train", "Train a model: the MLP or CNN on Fashion-MNIST, or the character transformer");
  AddTrainingFlags(train, flags);
  AddThreadFlags(train, flags);
  AddDistributionFlags(train, flags);
  AddTracingFlags(train, flags);
  AddCheckpointFlags(train, flags);
  train->add_flag("--json", flags.json, "End with one JSON summary line");
  return train;
}

int RunTrainCommand(const TrainFlags& flags) {
  train::TrainOptions options;
  if (!OptionsFromFlags(flags, &options)) return 2;
  // A worker of a multi-worker job: the cluster from the environment (weft launch, WEFT_CONFIG,
  // TF_CONFIG, Slurm, Open MPI). Rank 0 of a rendezvous keeps hosting the coordinator meanwhile.
  WorkerCluster worker_cluster;
  if ((flags.strategy == "multi_worker_mirrored" || flags.strategy == "parameter_server") &&
      !JoinWorkerCluster(flags, &worker_cluster, &options)) {
    return 2;
  }
  // Under `weft launch --elastic`: the launch's membership.
  if (const char* membership = std::getenv(kElasticMembershipVariable);
      membership != nullptr && flags.strategy == "multi_worker_mirrored") {
    options.elastic_membership = membership;
    if (const char* fewest = std::getenv(kElasticMinWorkersVariable); fewest != nullptr) {
      options.elastic_min_workers = std::max(1, std::atoi(fewest));
    }
  }
  SetThreadPools(flags, &options);
  // On loopback only, so it needs no token: a training process is no server.
  std::unique_ptr<MetricsEndpoint> metrics;
  if (flags.metrics_port >= 0) {
    MetricsEndpointOptions endpoint;
    endpoint.port = flags.metrics_port;  // bind_host stays 127.0.0.1
    StatusOr<std::unique_ptr<MetricsEndpoint>> started = MetricsEndpoint::Start(endpoint);
    if (!started.ok()) {
      std::fprintf(stderr, "weft train: %s\n", started.status().ToString().c_str());
      return 2;
    }
    metrics = std::move(started).value();
    std::fprintf(stderr, "weft train: metrics at http://%s/metrics\n", metrics->address().c_str());
  }
  const bool terminal = isatty(fileno(stdout)) != 0;
  StatusOr<train::TrainSummary> summary =
      train::Train(options, DisplayCallbacks(options, terminal));
  if (!summary.ok()) {
    std::fprintf(stderr, "weft train: %s\n", summary.status().ToString().c_str());
    bool bad_input = IsNotFound(summary.status()) || IsInvalidArgument(summary.status());
    return bad_input ? 2 : 1;
  }
  return ReportSummary(flags, options, *summary);
}

}  // namespace weft::cli
