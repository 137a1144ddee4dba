// fmnist_cnn: workload W2 (the Fashion-MNIST CNN) written with Weft's layers and Model::Fit, as a
// user would write it: one epoch of at most --max-steps N batches (default 100), then one JSON
// line of figures (only the training is timed).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "weft/data/dataset.h"
#include "weft/train/layers/convolutional.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"

using namespace weft;         // NOLINT: an example, kept short
using namespace weft::train;  // NOLINT

int main(int argc, char** argv) {
  const bool has_steps = argc == 3 && std::strcmp(argv[1], "--max-steps") == 0;
  const int64_t max_steps = has_steps ? std::atoll(argv[2]) : 100;
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  auto train = data::Dataset::FromIdxFiles(dir + "train-images-idx3-ubyte.gz",
                                           dir + "train-labels-idx1-ubyte.gz");

  Sequential model(Reshape({28, 28, 1}), Conv2D(32, 5, "relu", {.padding = "same"}),
                   MaxPooling2D(2), Conv2D(64, 5, "relu", {.padding = "same"}), MaxPooling2D(2),
                   Flatten(), Dense(1024, "relu"), Dense(10));
  Status status = model.Compile(NewMomentumOptimizer(0.05, 0.9),
                                SparseCategoricalCrossentropy(/*from_logits=*/true), {"accuracy"});

  const auto start = std::chrono::steady_clock::now();
  StatusOr<History> history =
      status.ok() ? model.Fit(train.Shuffle(60000, /*seed=*/1).Batch(128, /*drop_remainder=*/true),
                              {.epochs = 1, .steps_per_epoch = max_steps})
                  : StatusOr<History>(status);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!history.ok()) {
    std::fprintf(stderr, "fmnist_cnn: %s\n", history.status().ToString().c_str());
    return 1;
  }
  std::printf("{\"images_per_sec\": %.1f, \"steps\": %lld, \"final_loss\": %.4f}\n",
              max_steps * 128 / seconds, static_cast<long long>(max_steps),
              history->epochs.back().at("loss"));
  return 0;
}
