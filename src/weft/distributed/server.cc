#include "weft/distributed/server.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "weft/core/str_util.h"
#include "weft/distributed/collective/distributed_collective_executor_mgr.h"
#include "weft/distributed/master/local_master.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/cpu_device.h"
#include "weft/runtime/device_factory.h"

namespace weft {
namespace {

int ThreadsOrDefault(int requested) { return requested > 0 ? requested : NumSchedulableCpus(); }

// This task's share of the host's cores: the cores over the tasks of its cluster (every job's)
// that run on its host, at least one. Tasks that share a host then do not run more compute
// threads than it has cores between them (with `weft launch --workers 2 --ps 2` on 2 cores each
// server gets one thread and none spins waiting for work another process's thread needs).
int ShareOfCores(const ServerConfig& config) {
  auto host_of = [](const std::string& address) { return address.substr(0, address.rfind(':')); };
  StatusOr<std::string> mine = config.cluster.TaskAddress(config.task.job, config.task.index);
  if (!mine.ok()) return NumSchedulableCpus();
  int local = 0;
  for (const auto& [job, addresses] : config.cluster.jobs()) {
    for (const std::string& address : addresses) local += host_of(address) == host_of(*mine);
  }
  return std::max(1, NumSchedulableCpus() / std::max(1, local));
}

// Threads for the master's set-up work (session creation, graph registration): calls that block
// on workers, never on computation.
constexpr int kMasterThreads = 8;

}  // namespace

StatusOr<std::unique_ptr<Server>> Server::Create(ServerOptions options) {
  if (options.devices < 1) {
    return InvalidArgument("a server needs at least 1 device, got ", options.devices);
  }
  const DeviceFactoryRegistry& factories =
      options.device_factories != nullptr ? *options.device_factories : DefaultDeviceFactories();
  WEFT_RETURN_IF_ERROR(
      factories.CheckDeviceType(options.device_type).WithContext("the server's device_type"));
  if (!options.worker_cache_factory) {
    return InvalidArgument("a server needs a worker cache factory from its transport");
  }
  std::unique_ptr<Server> server(new Server(std::move(options)));
  WEFT_RETURN_IF_ERROR(server->Start());
  return server;
}

Server::~Server() {
  if (!local_target_.empty()) UnregisterLocalMaster(local_target_);
}

Status Server::Start() {
  const ServerConfig& config = options_.server;
  WEFT_RETURN_IF_ERROR(ValidateTask(config.cluster, config.task));
  task_name_ = StrCat("/job:", config.task.job, "/replica:0/task:", config.task.index);

  UseSingleThreadedBlas();
  proto::ConfigProto device_config;
  (*device_config.mutable_device_count())[options_.device_type] = options_.devices;
  WEFT_ASSIGN_OR_RETURN(
      devices_,
      CreateLocalDevices(
          device_config,
          options_.intra_op_threads > 0 ? options_.intra_op_threads : ShareOfCores(config),
          config.task.job, config.task.index,
          options_.device_factories != nullptr ? *options_.device_factories
                                               : DefaultDeviceFactories()));
  compute_pool_ =
      std::make_unique<ThreadPool>("worker_compute", ThreadsOrDefault(options_.inter_op_threads));
  master_pool_ = std::make_unique<ThreadPool>("master", kMasterThreads);

  worker_env_.task_name = task_name_;
  worker_env_.devices = devices_.get();
  worker_env_.op_registry = &ops::AllOps();
  worker_env_.kernel_registry =
      options_.kernel_registry != nullptr ? options_.kernel_registry : &kernels::AllKernels();
  worker_env_.compute_pool = compute_pool_.get();
  worker_ = std::make_unique<Worker>(&worker_env_);
  // Caches for sessions that bring their own cluster also reach this task without the transport.
  auto cache_factory = [factory = options_.worker_cache_factory, task = task_name_,
                        worker = worker_.get()](const ClusterSpec& cluster) {
    return factory(cluster, task, worker);
  };
  WEFT_ASSIGN_OR_RETURN(worker_cache_, cache_factory(config.cluster));
  worker_env_.worker_cache = worker_cache_.get();
  worker_env_.worker_cache_factory = cache_factory;
  worker_env_.collective_mgr_factory = [task = task_name_](const std::string& session_handle,
                                                           WorkerCacheInterface* cache) {
    return NewWorkerSessionCollectives(task, session_handle, cache);
  };

  master_env_.local_task = task_name_;
  master_env_.worker_cache = worker_cache_.get();
  master_env_.worker_cache_factory = cache_factory;
  master_env_.op_registry = &ops::AllOps();
  master_env_.kernel_registry = worker_env_.kernel_registry;
  master_env_.pool = master_pool_.get();
  master_env_.worker_timeout_ms = options_.worker_timeout_ms;
  master_ = std::make_unique<Master>(&master_env_);
  local_target_ = RegisterLocalMaster(task_name_, master_.get());
  return Status::OK();
}

namespace {

Mutex& FactoriesMutex() {
  static Mutex mu;
  return mu;
}

std::map<std::string, ServerFactory>& Factories() {
  static auto* factories = new std::map<std::string, ServerFactory>();
  return *factories;
}

}  // namespace

void RegisterServerFactory(const std::string& protocol, ServerFactory factory) {
  MutexLock lock(FactoriesMutex());
  Factories()[protocol] = std::move(factory);
}

StatusOr<std::unique_ptr<ServerInterface>> NewServer(const std::string& protocol,
                                                     const ServerOptions& options) {
  ServerFactory factory;
  {
    MutexLock lock(FactoriesMutex());
    auto found = Factories().find(protocol);
    if (found == Factories().end()) {
      return NotFound(
          "no server transport '", protocol,
          "' is registered (link distributed/rpc and call its Register...ServerFactory)");
    }
    factory = found->second;
  }
  return factory(options);
}

}  // namespace weft
