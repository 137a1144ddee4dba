// `weft train`: flags, progress display and the JSON summary around train::Train.
#pragma once

#include <CLI/CLI.hpp>

namespace weft::cli {

struct TrainFlags {
  std::string model = "mlp";
  int64_t mlp_width = 256;
  int64_t snapshot_every_steps = 0;
  bool exactly_once = false;
  bool per_worker_dataset = false;
  std::string snapshot_dir;
  int epochs = 3;
  bool epochs_given = false;
  int64_t max_steps = -1;
  int batch_size = 128;
  bool batch_size_given = false;
  std::string optimizer;     // "": the model's (train::MakeOptimizer)
  std::string lr_schedule;   // "": the model's (train::MakeOptimizer)
  double learning_rate = 0;  // 0: TrainOptions' default for the strategy
  int steps_per_execution = 1;
  int64_t seed = 1;
  std::string precision = "fp32";             // fp32 | bf16 (the mixed_bfloat16 dtype policy)
  std::string all_reduce_precision = "fp32";  // fp32 | bf16: gradients between workers
  std::string data_dir;
  bool json = false;
  int threads = 0;
  int inter_op_threads = -1;  // -1: take --threads
  int intra_op_threads = -1;  // -1: take --threads
  std::string strategy;       // "": mirrored when devices > 1
  int devices = 1;
  bool devices_given = false;
  std::string device_type = "CPU";
  std::string target;             // "grpc://host:port": train on that cluster
  std::string cluster;            // with target: "worker=h:p,h:p", sent with the session
  int64_t worker_timeout_ms = 0;  // with target: 0 takes the server's --worker-timeout-ms
  // multi_worker_mirrored:
  std::string coordinator;  // Slurm / Open MPI ranks meet here ("": WEFT_COORDINATOR)
  bool force_tcp = false;   // TCP between the workers even on one host
  int64_t collective_timeout_ms = 300000;
  int64_t step_breakdown = 0;           // steps to trace and break down (0: none)
  int64_t throughput_warmup_steps = 0;  // first steps left out of the reported throughput
  std::string trace;                    // Chrome trace file ("": none)
  std::string trace_steps;              // "FIRST:LAST" ("": train/trace_writer.h's default range)
  int metrics_port = -1;         // serve /metrics on loopback at this port (0: any; -1: none)
  std::string checkpoint_dir;    // "": no checkpoints
  int64_t save_every_steps = 0;  // 0: only at the end
  int keep = 3;
  bool async_save = false;
};

// Declares the subcommand and its flags on `app`; the flags are written into `flags`.
CLI::App* AddTrainCommand(CLI::App& app, TrainFlags& flags);

// Runs the training; returns the process exit code (0 ok, 1 failed, 2 bad input such as a
// missing data directory).
int RunTrainCommand(const TrainFlags& flags);

}  // namespace weft::cli
