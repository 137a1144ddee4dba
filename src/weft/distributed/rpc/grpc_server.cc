#include "weft/distributed/rpc/grpc_server.h"

#include <mutex>

#include <grpcpp/grpcpp.h>

#include "weft/core/str_util.h"
#include "weft/core/thread_pool.h"
#include "weft/distributed/master.h"
#include "weft/distributed/rpc/bulk_transfer.h"
#include "weft/distributed/rpc/grpc_call_dispatcher.h"
#include "weft/distributed/rpc/grpc_master_service.h"
#include "weft/distributed/rpc/grpc_util.h"
#include "weft/distributed/rpc/grpc_worker_cache.h"
#include "weft/distributed/rpc/grpc_worker_service.h"
#include "weft/distributed/worker.h"
#include "weft/kernels/register_kernels.h"
#include "weft/ops/register_ops.h"
#include "weft/runtime/cpu_device.h"
#include "weft/runtime/device_mgr.h"

namespace weft {
namespace {

int ThreadsOrDefault(int requested) { return requested > 0 ? requested : NumSchedulableCpus(); }

// Threads for the master's set-up work (session creation, graph registration): calls that block
// on workers, never on computation.
constexpr int kMasterThreads = 8;

// Members are declared in construction order and destroyed in reverse: the gRPC server stops
// first, then the services, the master, the worker and the devices they use.
class GrpcServerImpl final : public GrpcServer {
 public:
  explicit GrpcServerImpl(const GrpcServerOptions& options) : options_(options) {}
  ~GrpcServerImpl() override { Stop(); }

  Status Start() {
    const ServerConfig& config = options_.server;
    WEFT_RETURN_IF_ERROR(ValidateTask(config.cluster, config.task));
    WEFT_ASSIGN_OR_RETURN(std::string own_address,
                          config.cluster.TaskAddress(config.task.job, config.task.index));
    const size_t colon = own_address.rfind(':');
    const std::string port = own_address.substr(colon + 1);
    task_name_ = StrCat("/job:", config.task.job, "/replica:0/task:", config.task.index);

    UseSingleThreadedBlas();
    proto::ConfigProto device_config;
    (*device_config.mutable_device_count())["CPU"] = options_.devices;
    WEFT_ASSIGN_OR_RETURN(
        devices_, CreateLocalDevices(device_config, ThreadsOrDefault(options_.intra_op_threads),
                                     config.task.job, config.task.index));
    compute_pool_ =
        std::make_unique<ThreadPool>("worker_compute", ThreadsOrDefault(options_.inter_op_threads));
    master_pool_ = std::make_unique<ThreadPool>("master", kMasterThreads);

    BulkTransferServer::Options bulk_options;
    bulk_options.host = options_.bind_host;
    WEFT_ASSIGN_OR_RETURN(bulk_server_, BulkTransferServer::Create(bulk_options));
    bulk_client_ = std::make_shared<BulkTransferClient>();

    worker_env_.task_name = task_name_;
    worker_env_.devices = devices_.get();
    worker_env_.op_registry = &ops::AllOps();
    worker_env_.kernel_registry = &kernels::AllKernels();
    worker_env_.compute_pool = compute_pool_.get();
    worker_ = std::make_unique<Worker>(&worker_env_);
    // Caches for sessions that bring their own cluster also reach this task without an RPC.
    auto cache_factory =
        [task = task_name_, worker = worker_.get(), bulk_client = bulk_client_](
            const ClusterSpec& cluster) -> StatusOr<std::unique_ptr<WorkerCacheInterface>> {
      return NewGrpcWorkerCache(cluster, task, worker, bulk_client);
    };
    worker_cache_ = NewGrpcWorkerCache(config.cluster, task_name_, worker_.get(), bulk_client_);
    worker_env_.worker_cache = worker_cache_.get();
    worker_env_.worker_cache_factory = cache_factory;

    master_env_.local_task = task_name_;
    master_env_.worker_cache = worker_cache_.get();
    master_env_.worker_cache_factory = cache_factory;
    master_env_.op_registry = &ops::AllOps();
    master_env_.kernel_registry = &kernels::AllKernels();
    master_env_.pool = master_pool_.get();
    master_env_.worker_ready_timeout_ms = options_.worker_ready_timeout_ms;
    master_ = std::make_unique<Master>(&master_env_);

    // gRPC 1.51 tears down its shared callback queue with the process's last channel or server
    // and can double-free it then (seen under ASan with several servers in one process).
    RetainCallbackCompletionQueue();
    dispatcher_ = std::make_unique<GrpcCallDispatcher>();
    worker_service_ =
        std::make_unique<GrpcWorkerService>(worker_.get(), bulk_server_.get(), dispatcher_.get());
    master_service_ = std::make_unique<GrpcMasterService>(master_.get(), dispatcher_.get());

    grpc::ServerBuilder builder;
    int selected_port = 0;
    const std::string listen_address = StrCat(options_.bind_host, ":", port);
    builder.AddListeningPort(listen_address, grpc::InsecureServerCredentials(), &selected_port);
    builder.SetMaxReceiveMessageSize(-1);
    builder.SetMaxSendMessageSize(-1);
    builder.RegisterCallbackGenericService(dispatcher_.get());
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || selected_port == 0) {
      return Unavailable("could not listen on ", listen_address, " for task ", task_name_,
                         " (is the port taken?)");
    }
    address_ = StrCat(options_.bind_host, ":", selected_port);
    return Status::OK();
  }

  std::string address() const override { return address_; }
  const std::string& task_name() const override { return task_name_; }

  void Stop() override {
    std::lock_guard<std::mutex> lock(stop_mu_);
    if (stopped_) return;
    stopped_ = true;
    // Calls in flight get a short grace period, then are cancelled; the bulk path closes after
    // gRPC so that no RecvTensor reply names a port that is gone.
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
      server_->Wait();
    }
    if (bulk_server_ != nullptr) bulk_server_->Shutdown();
  }

 private:
  const GrpcServerOptions options_;
  std::string task_name_;
  std::string address_;

  std::unique_ptr<DeviceMgr> devices_;
  std::unique_ptr<ThreadPool> compute_pool_;
  std::unique_ptr<ThreadPool> master_pool_;
  std::unique_ptr<BulkTransferServer> bulk_server_;
  std::shared_ptr<BulkTransferClient> bulk_client_;
  WorkerEnv worker_env_;
  // Declared before the worker it returns for this task, so the worker goes first.
  std::unique_ptr<WorkerCacheInterface> worker_cache_;
  std::unique_ptr<Worker> worker_;
  MasterEnv master_env_;
  std::unique_ptr<Master> master_;
  std::unique_ptr<GrpcCallDispatcher> dispatcher_;
  std::unique_ptr<GrpcWorkerService> worker_service_;
  std::unique_ptr<GrpcMasterService> master_service_;
  std::unique_ptr<grpc::Server> server_;

  std::mutex stop_mu_;
  bool stopped_ = false;  // guarded by stop_mu_
};

}  // namespace

StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Create(const GrpcServerOptions& options) {
  if (options.devices < 1)
    return InvalidArgument("a server needs at least 1 device, got ", options.devices);
  auto server = std::make_unique<GrpcServerImpl>(options);
  WEFT_RETURN_IF_ERROR(server->Start());
  return std::unique_ptr<GrpcServer>(std::move(server));
}

}  // namespace weft
