// The setup of a run of the training loop (train_loop.cc): its options checked, the strategy they
// name, the session's config and the replicas' devices. Stateless functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/config.pb.h"
#include "weft/distribute/strategy.h"
#include "weft/train/elastic_worker.h"
#include "weft/train/train_loop.h"

namespace weft::train {

// InvalidArgument naming the option at fault, for a run of `workers` workers.
Status ValidateTrainOptions(const TrainOptions& options, int workers);

// The strategy the options name over `devices` (the replicas' devices); under elastic training
// (`elastic` non-null) a MultiWorkerMirroredStrategy of its current generation.
StatusOr<std::unique_ptr<distribute::Strategy>> MakeStrategy(
    const TrainOptions& options, const std::vector<std::string>& devices,
    const ElasticWorker* elastic);

// The session's config: the thread pools, and with a target its worker timeout and cluster.
StatusOr<proto::ConfigProto> MakeSessionConfig(const TrainOptions& options);

// The devices of the replicas: --devices of the device type here, or every device of that type of
// the cluster's tasks.
StatusOr<std::vector<std::string>> ReplicaDevices(const TrainOptions& options,
                                                  const proto::ConfigProto& session_config);

}  // namespace weft::train
