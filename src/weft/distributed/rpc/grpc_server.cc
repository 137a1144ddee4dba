#include "weft/distributed/rpc/grpc_server.h"

#include <cstdlib>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "weft/core/mutex.h"
#include "weft/core/str_util.h"
#include "weft/distributed/rpc/bulk_transfer.h"
#include "weft/distributed/rpc/grpc_call_dispatcher.h"
#include "weft/distributed/rpc/grpc_credentials.h"
#include "weft/distributed/rpc/grpc_master_service.h"
#include "weft/distributed/rpc/grpc_util.h"
#include "weft/distributed/rpc/grpc_worker_cache.h"
#include "weft/distributed/rpc/grpc_worker_service.h"
#include "weft/distributed/server.h"

namespace weft {
namespace {

// Binds a transport-neutral Server to gRPC. Members are declared in construction order and
// destroyed in reverse: the gRPC server stops first, then the services, the Server (master,
// worker, devices) and the bulk path they use.
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

    const TransportSecurity& security = options_.security;
    if (!security.authenticates() && !options_.insecure && !IsLoopbackHost(options_.bind_host)) {
      return InvalidArgument(
          "refusing to listen on ", options_.bind_host, " for task ", config.task.job, ":",
          config.task.index,
          " without TLS (--tls-cert, --tls-key, --tls-ca) or a token (--token-file or WEFT_TOKEN):"
          " anyone who reaches the port could run graphs on it. Bind to 127.0.0.1, secure it, or "
          "pass --insecure (WEFT_INSECURE=1) to accept that");
    }
    BulkTransferServer::Options bulk_options;
    bulk_options.host = options_.bind_host;
    bulk_options.token = security.token;
    WEFT_ASSIGN_OR_RETURN(bulk_server_, BulkTransferServer::Create(bulk_options));
    BulkTransferClient::Options bulk_client_options;
    bulk_client_options.token = security.token;
    bulk_client_ = std::make_shared<BulkTransferClient>(bulk_client_options);

    ServerOptions server_options;
    server_options.server = config;
    server_options.devices = options_.devices;
    server_options.device_type = options_.device_type;
    server_options.intra_op_threads = options_.intra_op_threads;
    server_options.inter_op_threads = options_.inter_op_threads;
    server_options.worker_timeout_ms = options_.worker_timeout_ms;
    server_options.worker_cache_factory =
        [bulk_client = bulk_client_, security](
            const ClusterSpec& cluster, const std::string& local_task,
            WorkerInterface* local_worker) -> StatusOr<std::unique_ptr<WorkerCacheInterface>> {
      return NewGrpcWorkerCache(cluster, local_task, local_worker, bulk_client, security);
    };
    WEFT_ASSIGN_OR_RETURN(server_, Server::Create(std::move(server_options)));

    // gRPC 1.51 tears down its shared callback queue with the process's last channel or server
    // and can double-free it then (seen under ASan with several servers in one process).
    RetainCallbackCompletionQueue();
    dispatcher_ = std::make_unique<GrpcCallDispatcher>();
    dispatcher_->set_token(security.token);
    worker_service_ = std::make_unique<GrpcWorkerService>(server_->worker(), bulk_server_.get(),
                                                          dispatcher_.get());
    master_service_ = std::make_unique<GrpcMasterService>(server_->master(), dispatcher_.get());

    grpc::ServerBuilder builder;
    int selected_port = 0;
    const std::string listen_address = StrCat(options_.bind_host, ":", port);
    builder.AddListeningPort(listen_address, MakeServerCredentials(security), &selected_port);
    builder.SetMaxReceiveMessageSize(-1);
    builder.SetMaxSendMessageSize(-1);
    builder.RegisterCallbackGenericService(dispatcher_.get());
    grpc_server_ = builder.BuildAndStart();
    if (grpc_server_ == nullptr || selected_port == 0) {
      return Unavailable("could not listen on ", listen_address, " for task ", task_name(),
                         security.tls() ? " (is the port taken, or are the TLS files not a "
                                          "matching certificate and key?)"
                                        : " (is the port taken?)");
    }
    address_ = StrCat(options_.bind_host, ":", selected_port);
    return Status::OK();
  }

  std::string address() const override { return address_; }
  const std::string& task_name() const override { return server_->task_name(); }
  WorkerCacheInterface* worker_cache() override { return server_->worker_cache(); }
  const std::string& local_target() const override { return server_->local_target(); }

  void Stop() override {
    MutexLock lock(stop_mu_);
    if (stopped_) return;
    stopped_ = true;
    // Calls in flight get a short grace period, then are cancelled; the bulk path closes after
    // gRPC so that no RecvTensor reply names a port that is gone.
    if (grpc_server_ != nullptr) {
      grpc_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
      grpc_server_->Wait();
    }
    if (bulk_server_ != nullptr) bulk_server_->Shutdown();
  }

 private:
  const GrpcServerOptions options_;
  std::string address_;

  std::unique_ptr<BulkTransferServer> bulk_server_;
  std::shared_ptr<BulkTransferClient> bulk_client_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<GrpcCallDispatcher> dispatcher_;
  std::unique_ptr<GrpcWorkerService> worker_service_;
  std::unique_ptr<GrpcMasterService> master_service_;
  std::unique_ptr<grpc::Server> grpc_server_;

  Mutex stop_mu_;
  bool stopped_ WEFT_GUARDED_BY(stop_mu_) = false;
};

}  // namespace

StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Create(const GrpcServerOptions& options) {
  if (options.devices < 1)
    return InvalidArgument("a server needs at least 1 device, got ", options.devices);
  auto server = std::make_unique<GrpcServerImpl>(options);
  WEFT_RETURN_IF_ERROR(server->Start());
  return std::unique_ptr<GrpcServer>(std::move(server));
}

void RegisterGrpcServerFactory() {
  RegisterServerFactory(
      "grpc", [](const ServerOptions& options) -> StatusOr<std::unique_ptr<ServerInterface>> {
        GrpcServerOptions grpc_options;
        grpc_options.server = options.server;
        grpc_options.devices = options.devices;
        grpc_options.device_type = options.device_type;
        grpc_options.intra_op_threads = options.intra_op_threads;
        grpc_options.inter_op_threads = options.inter_op_threads;
        grpc_options.worker_timeout_ms = options.worker_timeout_ms;
        WEFT_ASSIGN_OR_RETURN(grpc_options.security, TransportSecurityFromEnvironment());
        const char* insecure = std::getenv("WEFT_INSECURE");
        grpc_options.insecure = insecure != nullptr && std::string_view(insecure) == "1";
        StatusOr<std::string> address =
            options.server.cluster.TaskAddress(options.server.task.job, options.server.task.index);
        if (address.ok()) {
          const std::string host = address->substr(0, address->rfind(':'));
          grpc_options.bind_host = IsLoopbackHost(host) ? "127.0.0.1" : "0.0.0.0";
        }
        WEFT_ASSIGN_OR_RETURN(std::unique_ptr<GrpcServer> server, GrpcServer::Create(grpc_options));
        return std::unique_ptr<ServerInterface>(std::move(server));
      });
}

}  // namespace weft
