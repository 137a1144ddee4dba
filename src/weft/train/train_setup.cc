// The setup of a run of the training loop (see train_setup.h).
#include "weft/train/train_setup.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "weft/core/str_util.h"
#include "weft/distribute/central_storage_strategy.h"
#include "weft/distribute/multi_worker_mirrored_strategy.h"
#include "weft/distribute/parameter_server_strategy.h"
#include "weft/runtime/cpu_device.h"
#include "weft/runtime/device_factory.h"
#include "weft/runtime/session.h"

namespace weft::train {
namespace {

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

}  // namespace

StatusOr<std::unique_ptr<distribute::Strategy>> MakeStrategy(
    const TrainOptions& options, const std::vector<std::string>& devices,
    const ElasticWorker* elastic) {
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
    if (elastic != nullptr) multi.generation = elastic->generation();
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

namespace {

// The input options only parameter_server's coordinator serves: exactly-once input and
// per-worker datasets.
Status ValidateInputOptions(const TrainOptions& options, bool parameter_server) {
  if (options.exactly_once_input && !parameter_server) {
    return InvalidArgument(
        "exactly-once input (--exactly-once) is for --strategy parameter_server, ",
        "whose coordinator commits each step's updates; not for '",
        options.strategy.empty() ? "one_device" : options.strategy, "'");
  }
  if (options.exactly_once_input && options.steps_per_execution != 1) {
    return InvalidArgument("exactly-once input (--exactly-once) runs one step per execution; drop ",
                           "--steps-per-execution ", options.steps_per_execution);
  }
  if (options.per_worker_dataset && !parameter_server) {
    return InvalidArgument(
        "per-worker datasets (--per-worker-dataset) are for --strategy parameter_server, whose "
        "workers read their own data; not for '",
        options.strategy.empty() ? "one_device" : options.strategy, "'");
  }
  if (options.per_worker_dataset &&
      (options.exactly_once_input || options.steps_per_execution != 1)) {
    return InvalidArgument(
        "per-worker datasets (--per-worker-dataset) run one step per function and cannot lease "
        "input exactly once; drop ",
        options.exactly_once_input ? "--exactly-once" : "--steps-per-execution");
  }
  return Status::OK();
}

}  // namespace

Status ValidateTrainOptions(const TrainOptions& options, int workers) {
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
  WEFT_RETURN_IF_ERROR(ValidateInputOptions(options, parameter_server));
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

}  // namespace weft::train
