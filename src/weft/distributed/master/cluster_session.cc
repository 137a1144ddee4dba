#include "weft/distributed/master/cluster_session.h"

#include <algorithm>

#include "weft/core/mutex.h"
#include "weft/framework/tensor_proto_util.h"

namespace weft {
namespace {

class ClusterSession final : public Session {
 public:
  ClusterSession(std::unique_ptr<MasterInterface> master, const SessionOptions& options)
      : master_(std::move(master)), options_(options) {}

  ~ClusterSession() override { Close().IgnoreError(); }

  Status Create(const proto::GraphDef& graph) override {
    MutexLock lock(mu_);
    WEFT_RETURN_IF_ERROR(CheckOpen());
    if (has_graph_) return AlreadyExists("a graph has already been created for this session");
    return ExtendLocked(graph);
  }

  Status Extend(const proto::GraphDef& graph) override {
    MutexLock lock(mu_);
    WEFT_RETURN_IF_ERROR(CheckOpen());
    return ExtendLocked(graph);
  }

  Status ListDevices(std::vector<proto::DeviceAttributes>* devices) override {
    proto::ListDevicesRequest request;
    {
      MutexLock lock(mu_);
      WEFT_RETURN_IF_ERROR(CheckOpen());
      // The session's own cluster (its config may name one) is known once the master session is.
      if (handle_.empty()) WEFT_RETURN_IF_ERROR(CreateLocked(proto::GraphDef()));
      request.set_session_handle(handle_);
    }
    proto::ListDevicesResponse response;
    CallOptions call_options;
    ForSetUp(&call_options);
    WEFT_RETURN_IF_ERROR(master_->ListDevices(&call_options, request, &response));
    devices->assign(response.local_device().begin(), response.local_device().end());
    devices->insert(devices->end(), response.remote_device().begin(),
                    response.remote_device().end());
    return Status::OK();
  }

  Status Run(const NamedTensorList& inputs, const std::vector<std::string>& output_names,
             const std::vector<std::string>& target_names, std::vector<Tensor>* outputs) override {
    return Run(proto::RunOptions(), inputs, output_names, target_names, outputs, nullptr);
  }

  Status Run(const proto::RunOptions& run_options, const NamedTensorList& inputs,
             const std::vector<std::string>& output_names,
             const std::vector<std::string>& target_names, std::vector<Tensor>* outputs,
             proto::RunMetadata* run_metadata) override {
    proto::RunStepRequest request;
    {
      MutexLock lock(mu_);
      WEFT_RETURN_IF_ERROR(CheckOpen());
      // A Run before any Create runs on an empty graph, as DirectSession does.
      if (handle_.empty()) WEFT_RETURN_IF_ERROR(CreateLocked(proto::GraphDef()));
      request.set_session_handle(handle_);
    }
    for (const auto& [name, value] : inputs) {
      proto::NamedTensorProto* feed = request.add_feed();
      feed->set_name(name);
      *feed->mutable_tensor() = ToProto(value);
    }
    for (const std::string& name : output_names) request.add_fetch(name);
    for (const std::string& name : target_names) request.add_target(name);
    *request.mutable_options() = run_options;

    CallOptions call_options;
    const int64_t timeout_ms = run_options.timeout_in_ms() > 0
                                   ? run_options.timeout_in_ms()
                                   : options_.config.operation_timeout_in_ms();
    // The master enforces the deadline and answers DeadlineExceeded; the RPC's own deadline is a
    // backstop for a master that cannot answer at all.
    if (timeout_ms > 0) call_options.set_timeout_ms(timeout_ms + kDeadlineGraceMs);
    proto::RunStepResponse response;
    WEFT_RETURN_IF_ERROR(master_->RunStep(&call_options, request, &response));
    if (response.tensor_size() != static_cast<int>(output_names.size())) {
      return Internal("the master returned ", response.tensor_size(), " tensors for ",
                      output_names.size(), " fetches");
    }
    std::vector<Tensor> fetched;
    fetched.reserve(output_names.size());
    for (int i = 0; i < response.tensor_size(); ++i) {
      StatusOr<Tensor> value = TensorFromProto(response.tensor(i).tensor());
      if (!value.ok()) {
        return value.status().WithContext(StrCat("fetch '", output_names[i], "'"));
      }
      fetched.push_back(std::move(value).value());
    }
    *outputs = std::move(fetched);
    if (run_metadata != nullptr) *run_metadata = response.metadata();
    return Status::OK();
  }

  Status Close() override {
    MutexLock lock(mu_);
    if (closed_) return Status::OK();
    closed_ = true;
    if (handle_.empty()) return Status::OK();
    proto::CloseSessionRequest request;
    request.set_session_handle(handle_);
    proto::CloseSessionResponse response;
    CallOptions call_options;
    // The master bounds each of its two rounds of calls (deregister, delete) by the worker timeout.
    call_options.set_timeout_ms(2 * WorkerTimeoutMs() + kDeadlineGraceMs);
    return master_->CloseSession(&call_options, request, &response);
  }

 private:
  static constexpr int64_t kDeadlineGraceMs = 5000;
  // The master's default worker timeout (the server's --worker-timeout-ms).
  static constexpr int64_t kDefaultWorkerTimeoutMs = 30000;

  int64_t WorkerTimeoutMs() const {
    const int64_t configured = options_.config.worker_timeout_in_ms();
    return configured > 0 ? configured : kDefaultWorkerTimeoutMs;
  }

  // Creating a session waits for the master to come up, for it to find the workers and to create
  // a worker session on each (each bounded by the worker timeout): longer than that, a master is
  // not coming.
  void ForSetUp(CallOptions* options) const {
    options->set_timeout_ms(std::max<int64_t>(45000, 2 * WorkerTimeoutMs() + kDeadlineGraceMs));
    options->set_wait_for_ready(true);
  }

  Status CheckOpen() const WEFT_REQUIRES(mu_) {
    if (closed_) return FailedPrecondition("the session has been closed");
    return Status::OK();
  }

  // The first graph creates the master session; later ones extend it.
  Status ExtendLocked(const proto::GraphDef& graph) WEFT_REQUIRES(mu_) {
    if (handle_.empty()) {
      WEFT_RETURN_IF_ERROR(CreateLocked(graph));
      has_graph_ = graph.node_size() > 0;
      return Status::OK();
    }
    proto::ExtendSessionRequest request;
    request.set_session_handle(handle_);
    *request.mutable_graph_def() = graph;
    request.set_current_graph_version(graph_version_);
    proto::ExtendSessionResponse response;
    CallOptions call_options;
    ForSetUp(&call_options);
    WEFT_RETURN_IF_ERROR(master_->ExtendSession(&call_options, request, &response));
    graph_version_ = response.new_graph_version();
    if (graph.node_size() > 0) has_graph_ = true;
    return Status::OK();
  }

  Status CreateLocked(const proto::GraphDef& graph) WEFT_REQUIRES(mu_) {
    proto::CreateSessionRequest request;
    *request.mutable_graph_def() = graph;
    *request.mutable_config() = options_.config;
    proto::CreateSessionResponse response;
    CallOptions call_options;
    ForSetUp(&call_options);
    WEFT_RETURN_IF_ERROR(master_->CreateSession(&call_options, request, &response));
    handle_ = response.session_handle();
    graph_version_ = response.graph_version();
    return Status::OK();
  }

  const std::unique_ptr<MasterInterface> master_;
  const SessionOptions options_;

  Mutex mu_;
  std::string handle_ WEFT_GUARDED_BY(mu_);  // empty until the master session exists
  int64_t graph_version_ WEFT_GUARDED_BY(mu_) = 0;
  bool has_graph_ WEFT_GUARDED_BY(mu_) = false;  // a non-empty graph was created
  bool closed_ WEFT_GUARDED_BY(mu_) = false;
};

}  // namespace

std::unique_ptr<Session> NewClusterSession(std::unique_ptr<MasterInterface> master,
                                           const SessionOptions& options) {
  return std::make_unique<ClusterSession>(std::move(master), options);
}

}  // namespace weft
