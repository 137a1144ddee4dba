// W7: DLRM (train/dlrm_model.h) on the synthetic Criteo-shaped data (data/synthetic_criteo.h),
// trained with Model::Fit: 26 tables of dimension 16 (4 x 2,000,000, 8 x 100,000 and 14 x 10,000
// rows), bottom MLP 13-64-16, dot-product interactions, top MLP 256-128-1, binary cross-entropy on
// the logit, Adagrad lr 0.05 (sparse for the tables), batch 512 per step. In one process, or with
// `--strategy parameter_server` as the chief of `weft launch --workers N --ps M` (tables cut across
// the ps tasks, each step on one worker, asynchronously). Prints
//   METRIC w7_examples_per_sec (steps after --warmup), METRIC w7_heldout_logloss and
//   w7_baserate_logloss (always predicting the held-out positive rate), RATIO
//   w7_logloss_vs_baserate (smaller is better; W7 asks <= 0.9); under parameter_server also
//   METRIC ps_w7_wire_bytes_per_step (bytes sent over loopback per timed step, from /proc/net/dev:
//   every process's, so run it on a quiet machine) and RATIO ps_w7_wire_bytes_vs_touched_rows
//   (over the bytes a step must move: its distinct ids and their rows to the worker and their
//   gradients back, the dense parameters read and their gradients written).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "weft/core/str_util.h"
#include "weft/data/synthetic_criteo.h"
#include "weft/distribute/parameter_server_strategy.h"
#include "weft/distributed/cluster/cluster_resolver.h"
#include "weft/distributed/rpc/grpc_server.h"
#include "weft/distributed/rpc/grpc_session.h"
#include "weft/train/callbacks.h"
#include "weft/train/dlrm_model.h"

using namespace weft;         // NOLINT: a benchmark program, kept short
using namespace weft::train;  // NOLINT

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string strategy = "one_device";
  int64_t steps = 2000;
  int64_t warmup = 50;
  int64_t batch = 512;
  int64_t held_out = 100'000;
  uint64_t seed = 1;
  double learning_rate = 0.05;
  // Under parameter_server: CompileOptions::snapshot_every_steps (0: none). A snapshot copies
  // every table and its Adagrad accumulators to the chief (about 1.1 GB for W7).
  int64_t snapshot_every_steps = 0;
  int steps_per_execution = 1;
  // Under parameter_server: every worker generates its own examples (a per-worker dataset, a
  // range of example indices of its own) instead of the chief sending each batch.
  bool per_worker_dataset = false;
};

// Bytes sent over the loopback interface so far (every process's), or -1 when unreadable.
int64_t LoopbackSentBytes() {
  std::ifstream dev("/proc/net/dev");
  std::string line;
  while (std::getline(dev, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream name(line.substr(0, colon));
    std::string interface;
    name >> interface;
    if (interface != "lo") continue;
    std::istringstream fields(line.substr(colon + 1));
    int64_t value = 0;
    // Receive: bytes packets errs drop fifo frame compressed multicast; then transmit bytes.
    for (int i = 0; i < 9 && (fields >> value); ++i) {
    }
    return value;
  }
  return -1;
}

// Marks the time and the loopback bytes when the warm-up ends and when the last step ends.
class Stopwatch final : public Callback {
 public:
  explicit Stopwatch(int64_t warmup) : warmup_(warmup) {}
  Status OnTrainBatchEnd(Model& model, const Logs&) override {
    const int64_t step = model.position().global_step;
    if (step == warmup_) {
      start_ = Clock::now();
      start_bytes_ = LoopbackSentBytes();
    }
    end_ = Clock::now();
    end_bytes_ = LoopbackSentBytes();
    last_step_ = step;
    return Status::OK();
  }
  int64_t timed_steps() const { return last_step_ - warmup_; }
  double seconds() const { return std::chrono::duration<double>(end_ - start_).count(); }
  int64_t bytes() const { return end_bytes_ - start_bytes_; }

 private:
  int64_t warmup_;
  int64_t last_step_ = 0;
  Clock::time_point start_, end_;
  int64_t start_bytes_ = 0, end_bytes_ = 0;
};

// The bytes a step of `batch` examples must move between workers and ps tasks, averaged over a
// sample of batches: per table its distinct ids (8 bytes each, to find the rows and again with
// the gradient) and their rows (to the worker, and their gradients back), and every dense
// parameter read and its gradient written.
StatusOr<double> BytesAStepMustMove(const data::SyntheticCriteoOptions& data, int64_t batch,
                                    int64_t dim, int64_t dense_parameters) {
  constexpr int kSample = 20;
  double rows = 0;
  for (int b = 0; b < kSample; ++b) {
    WEFT_ASSIGN_OR_RETURN(data::Element element,
                          data::GenerateSyntheticCriteo(data, b * batch, batch));
    const int64_t tables = static_cast<int64_t>(data.table_rows.size());
    const int64_t* ids = element[1].data<int64_t>();
    for (int64_t t = 0; t < tables; ++t) {
      std::set<int64_t> distinct;
      for (int64_t i = 0; i < batch; ++i) distinct.insert(ids[i * tables + t]);
      rows += static_cast<double>(distinct.size());
    }
  }
  rows /= kSample;
  return rows * (2 * 8 + 2 * dim * 4) + 2.0 * 4 * static_cast<double>(dense_parameters);
}

StatusOr<std::unique_ptr<distribute::Strategy>> MakeStrategy(const Flags& flags) {
  if (flags.strategy == "one_device") {
    WEFT_ASSIGN_OR_RETURN(auto one, distribute::OneDeviceStrategy::Create("/cpu:0"));
    return std::unique_ptr<distribute::Strategy>(std::move(one));
  }
  RegisterGrpcSessionFactory();
  RegisterGrpcServerFactory();
  WEFT_ASSIGN_OR_RETURN(ResolvedCluster cluster, ResolveCluster(ProcessEnvironment()));
  distribute::ParameterServerOptions options;
  options.server = cluster.config;
  WEFT_ASSIGN_OR_RETURN(auto ps, distribute::ParameterServerStrategy::Create(std::move(options)));
  return std::unique_ptr<distribute::Strategy>(std::move(ps));
}

Status Run(const Flags& flags) {
  data::SyntheticCriteoOptions data;
  data.seed = flags.seed;
  DlrmOptions options;
  options.table_rows = data.table_rows;
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<DlrmModel> model, DlrmModel::Create(options));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<distribute::Strategy> strategy, MakeStrategy(flags));
  WEFT_RETURN_IF_ERROR(model->Compile(
      NewAdagradOptimizer(flags.learning_rate), BinaryCrossentropy(/*from_logits=*/true), {},
      {.strategy = strategy.get(), .snapshot_every_steps = flags.snapshot_every_steps}));
  Stopwatch stopwatch(flags.warmup);
  const int64_t total = flags.warmup + flags.steps;
  if (flags.per_worker_dataset) {
    // Each worker's own range of examples, long enough for every step to run on it.
    auto per_worker = [&](const distribute::InputContext& context) {
      const int64_t examples = total * flags.batch;
      return data::SyntheticCriteoDataset(data, context.input_pipeline_id() * examples, examples,
                                          flags.batch)
          .Repeat();
    };
    WEFT_RETURN_IF_ERROR(
        model->Fit(per_worker, {.steps_per_epoch = total, .callbacks = {&stopwatch}}).status());
  } else {
    WEFT_RETURN_IF_ERROR(
        model
            ->Fit(data::SyntheticCriteoDataset(data, 0, total * flags.batch, flags.batch),
                  {.callbacks = {&stopwatch}})
            .status());
  }
  // Far from the training examples' indices, so the two never overlap.
  const int64_t first = int64_t{1} << 40;
  WEFT_ASSIGN_OR_RETURN(Logs held_out, model->Evaluate(data::SyntheticCriteoDataset(
                                           data, first, flags.held_out, flags.batch)));
  WEFT_ASSIGN_OR_RETURN(data::Element labels,
                        data::GenerateSyntheticCriteo(data, first, flags.held_out));
  double positives = 0;
  for (int64_t i = 0; i < flags.held_out; ++i) positives += labels[2].data<float>()[i];
  const double p = positives / static_cast<double>(flags.held_out);
  const double base = -(p * std::log(p) + (1 - p) * std::log(1 - p));
  const double loss = held_out.at("loss");
  const std::string where =
      flags.strategy == "one_device"
          ? "1 process"
          : StrCat(dynamic_cast<distribute::ParameterServerStrategy&>(*strategy).num_worker_tasks(),
                   " workers, parameter servers");
  std::printf("METRIC w7_examples_per_sec %.0f examples/s (%s, %lld timed steps of %lld)\n",
              static_cast<double>(stopwatch.timed_steps() * flags.batch) / stopwatch.seconds(),
              where.c_str(), static_cast<long long>(stopwatch.timed_steps()),
              static_cast<long long>(flags.batch));
  std::printf("METRIC w7_heldout_logloss %.5f nats (after %lld steps)\n", loss,
              static_cast<long long>(total));
  std::printf("METRIC w7_baserate_logloss %.5f nats (held-out positive rate %.4f)\n", base, p);
  std::printf("RATIO w7_logloss_vs_baserate %.4f (smaller is better; W7 asks <= 0.9)\n",
              loss / base);
  if (flags.strategy == "parameter_server" && stopwatch.bytes() > 0) {
    int64_t dense_parameters = 0;
    for (const Variable& variable : model->trainable_variables()) {
      if (variable.name().find("embeddings") == std::string::npos) {
        dense_parameters += variable.shape().num_elements();
      }
    }
    WEFT_ASSIGN_OR_RETURN(
        double must_move,
        BytesAStepMustMove(data, flags.batch, options.embedding_dim, dense_parameters));
    const double per_step =
        static_cast<double>(stopwatch.bytes()) / static_cast<double>(stopwatch.timed_steps());
    std::printf("METRIC ps_w7_wire_bytes_per_step %.0f bytes (loopback, every process)\n",
                per_step);
    std::printf(
        "RATIO ps_w7_wire_bytes_vs_touched_rows %.3f (smaller is better; at most 1.5 asked; a "
        "step must move %.0f bytes)\n",
        per_step / must_move, must_move);
  }
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"W7: DLRM on synthetic Criteo-shaped data"};
  app.add_option("--strategy", flags.strategy,
                 "one_device, or parameter_server (under weft launch)")
      ->check(CLI::IsMember({"one_device", "parameter_server"}));
  app.add_option("--steps", flags.steps, "timed training steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup", flags.warmup, "steps before the timing starts")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch", flags.batch, "examples per step")->check(CLI::PositiveNumber);
  app.add_option("--held-out", flags.held_out, "held-out examples")->check(CLI::PositiveNumber);
  app.add_option("--seed", flags.seed, "the data's seed");
  app.add_option("--learning-rate", flags.learning_rate, "Adagrad's learning rate");
  app.add_option("--steps-per-execution", flags.steps_per_execution,
                 "training steps per run (CompileOptions::steps_per_execution)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--per-worker-dataset", flags.per_worker_dataset,
               "under parameter_server: every worker generates its own examples");
  app.add_option("--snapshot-every-steps", flags.snapshot_every_steps,
                 "parameter_server: keep a snapshot of the variables every this many steps (0: "
                 "none)");
  CLI11_PARSE(app, argc, argv);
  Status status = Run(flags);
  if (!status.ok()) {
    std::fprintf(stderr, "w7_dlrm: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
