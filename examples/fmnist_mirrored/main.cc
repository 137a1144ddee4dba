// fmnist_mirrored: the Fashion-MNIST MLP (workload W1) trained data-parallel. The model code is
// what it would be on one device; only the strategy given to Compile differs: MirroredStrategy
// over two CPU devices of this process, or with --multi-worker MultiWorkerMirroredStrategy over
// every worker of a cluster (run it under `weft launch --workers N`, or with WEFT_CONFIG set).
// Flags: --epochs N (default 1), --checkpoint-dir DIR (save each epoch there; resume from it).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "weft/data/dataset.h"
#include "weft/distribute/multi_worker_mirrored_strategy.h"
#include "weft/distributed/cluster/cluster_resolver.h"
#include "weft/distributed/rpc/grpc_server.h"
#include "weft/train/callbacks.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"

using namespace weft;         // NOLINT: an example, kept short
using namespace weft::train;  // NOLINT

// Two devices of this process, or this worker's part of the cluster the environment names.
StatusOr<std::unique_ptr<distribute::Strategy>> MakeStrategy(bool multi_worker) {
  std::unique_ptr<distribute::Strategy> strategy;
  if (!multi_worker) {
    WEFT_ASSIGN_OR_RETURN(strategy, distribute::MirroredStrategy::Create({"/cpu:0", "/cpu:1"}));
    return strategy;
  }
  RegisterGrpcServerFactory();
  WEFT_ASSIGN_OR_RETURN(ResolvedCluster cluster, ResolveCluster(ProcessEnvironment()));
  WEFT_ASSIGN_OR_RETURN(
      strategy, distribute::MultiWorkerMirroredStrategy::Create({.server = cluster.config}));
  return strategy;
}

int main(int argc, char** argv) {
  int epochs = 1;
  bool multi_worker = false;
  std::string checkpoint_dir;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--multi-worker") == 0) multi_worker = true;
    if (std::strcmp(argv[i], "--epochs") == 0 && i + 1 < argc) epochs = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--checkpoint-dir") == 0 && i + 1 < argc) checkpoint_dir = argv[++i];
  }
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  auto train = data::Dataset::FromIdxFiles(dir + "train-images-idx3-ubyte.gz",
                                           dir + "train-labels-idx1-ubyte.gz");
  auto test = data::Dataset::FromIdxFiles(dir + "t10k-images-idx3-ubyte.gz",
                                          dir + "t10k-labels-idx1-ubyte.gz");

  StatusOr<std::unique_ptr<distribute::Strategy>> strategy = MakeStrategy(multi_worker);
  if (!strategy.ok()) {
    std::fprintf(stderr, "fmnist_mirrored: %s\n", strategy.status().ToString().c_str());
    return 1;
  }
  Sequential model(Dense(256, "relu"), Dense(256, "relu"), Dense(10));
  Status status = model.Compile(NewMomentumOptimizer(0.05, 0.9),
                                SparseCategoricalCrossentropy(/*from_logits=*/true), {"accuracy"},
                                {.strategy = strategy->get()});
  ProgressBar progress;
  ModelCheckpoint checkpoint(checkpoint_dir);
  std::vector<Callback*> callbacks = {&progress};
  if (!checkpoint_dir.empty()) callbacks.push_back(&checkpoint);
  StatusOr<History> history =
      status.ok() ? model.Fit(train.Shuffle(60000, /*seed=*/1).Batch(128, /*drop_remainder=*/true),
                              {.epochs = epochs, .callbacks = callbacks})
                  : StatusOr<History>(status);
  StatusOr<Logs> evaluated =
      history.ok() ? model.Evaluate(test.Batch(1000)) : StatusOr<Logs>(history.status());
  if (!evaluated.ok()) {
    std::fprintf(stderr, "fmnist_mirrored: %s\n", evaluated.status().ToString().c_str());
    return 1;
  }
  std::printf("test accuracy %.4f on %d replicas\n", evaluated->at("accuracy"),
              (*strategy)->num_replicas_in_sync());
  return 0;
}
