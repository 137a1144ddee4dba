// The workloads `weft train` trains (docs/transformers.md for W6): W1 and W2, the MLP and the CNN
// on Fashion-MNIST, and W6, the character transformer on the `fortunes` corpus. Each comes with its
// model, its training batches, its optimizer and how the trained model is judged, so Train
// (train_loop.h) runs every one through the same Compile and Fit. Stateless functions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weft/data/dataset.h"
#include "weft/distribute/coordinator/per_worker_dataset.h"
#include "weft/train/losses.h"
#include "weft/train/model.h"
#include "weft/train/optimizer.h"
#include "weft/train/train_loop.h"

namespace weft::train {

// W6's fixed shape (issue 25): the schedule's length and the validation windows.
inline constexpr int64_t kW6ScheduleSteps = 2000;
inline constexpr int64_t kW6WarmupSteps = 100;
inline constexpr int64_t kW6ValidationWindows = 256;

struct Workload {
  std::unique_ptr<Model> model;  // not compiled yet
  Loss loss;
  std::vector<std::string> metrics{};
  // Global batches of the options' batch size, steps_per_epoch of them per epoch.
  data::Dataset train;
  int64_t steps_per_epoch = 0;
  // The same data for one worker of several, as a worker builds it itself (shuffled, repeated and
  // batched like `train`); empty for a workload without one.
  distribute::PerWorkerDatasetFn per_worker_train{};
  // Tokens per example (the text's context; 1 for an image), for the throughput in tokens.
  int64_t tokens_per_example = 1;
  // After training: fills the summary's quality figure (test accuracy, validation loss).
  std::function<Status(Model& model, TrainSummary* summary)> evaluate;
};

// The model, data and judgement of options.model; NotFound naming a missing data directory or
// corpus, InvalidArgument naming a bad option (a context longer than the model's, say).
StatusOr<Workload> MakeWorkload(const TrainOptions& options);

// The optimizer of options.optimizer at the options' learning rate, or the workload's default:
// momentum 0.05 for the image models, and under parameter_server Adam at 1e-3 decayed by a cosine
// to a tenth over the run (epochs x `steps_per_epoch`, or max_steps; options.lr_schedule "cosine"
// decays any image model's optimizer so, "constant" none); for W6 AdamW at 1e-3
// (betas 0.9/0.95, weight decay 0.1 on tensors of rank 2 and up), warmup over 100 steps and
// cosine decay to 1e-4 at step 2,000, gradients clipped to global norm 1.0.
StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(const TrainOptions& options,
                                                   int64_t steps_per_epoch);

}  // namespace weft::train
