// libFuzzer target: the MasterService as a client session reaches it, driving a fresh in-process
// Master (distributed/master/master.h) over a fresh Worker of the same task per input.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "service_fuzz_util.h"
#include "service_methods.h"

#include "weft/distributed/master/master.h"
#include "weft/master.pb.h"

namespace weft::fuzz {
namespace {

// How long the master waits for the (in-process, always prompt) worker unless a session says.
constexpr int64_t kWorkerTimeoutMs = 1000;

ThreadPool& MasterPool() {
  static ThreadPool* pool = new ThreadPool("fuzz_master", 2);
  return *pool;
}

class FuzzMaster {
 public:
  FuzzMaster() {
    env_.local_task = kTask;
    env_.worker_cache = worker_.cache.get();
    env_.worker_cache_factory =
        [this](const ClusterSpec& cluster) -> StatusOr<std::unique_ptr<WorkerCacheInterface>> {
      return InProcessCache(cluster, worker_.worker.get());
    };
    env_.op_registry = &ops::AllOps();
    env_.kernel_registry = &kernels::AllKernels();
    env_.pool = &MasterPool();
    env_.worker_timeout_ms = kWorkerTimeoutMs;
    master_ = std::make_unique<Master>(&env_);
  }
  // The master goes first: closing its sessions calls the worker.
  ~FuzzMaster() { master_.reset(); }

  void RunCall(uint8_t method, std::string_view bytes) {
    switch (PickMethod<MasterMethod>(method)) {
      case MasterMethod::kCreateSession: {
        proto::CreateSessionResponse response;
        const Status status =
            Call<proto::CreateSessionRequest>(bytes, &response, &Master::CreateSessionAsync);
        TraceCall("CreateSessionRequest", status);
        if (status.ok()) last_session_ = response.session_handle();
        return;
      }
      case MasterMethod::kExtendSession:
        return Call<proto::ExtendSessionRequest, proto::ExtendSessionResponse>(
            bytes, &Master::ExtendSessionAsync);
      case MasterMethod::kRunStep:
        return RunStep(bytes);
      case MasterMethod::kCloseSession:
        return Call<proto::CloseSessionRequest, proto::CloseSessionResponse>(
            bytes, &Master::CloseSessionAsync);
      case MasterMethod::kListDevices:
        return Call<proto::ListDevicesRequest, proto::ListDevicesResponse>(
            bytes, &Master::ListDevicesAsync);
      default:
        return Call<proto::ResetRequest, proto::ResetResponse>(bytes, &Master::ResetAsync);
    }
  }

 private:
  template <typename Request>
  bool Parse(std::string_view bytes, Request* request) {
    if (!request->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return false;
    if constexpr (!std::is_same_v<Request, proto::CreateSessionRequest> &&
                  !std::is_same_v<Request, proto::ResetRequest>) {
      if (request->session_handle().empty()) request->set_session_handle(last_session_);
    }
    return true;
  }

  // The calls without CallOptions: they must answer on their own (within kCancelledCallLimit).
  template <typename Request, typename Response>
  Status Call(std::string_view bytes, Response* response,
              void (Master::*method)(const Request*, Response*, StatusCallback)) {
    Request request;
    if (!Parse(bytes, &request)) return InvalidArgument("unparsable request");
    Notification finished;
    Status status;
    (master_.get()->*method)(&request, response, [&finished, &status](const Status& s) {
      status = s;
      finished.Notify();
    });
    WEFT_CHECK(finished.WaitForNotificationWithTimeout(kCancelledCallLimit))
        << "a master call did not answer within " << kCancelledCallLimit.count() << " s";
    return status;
  }
  template <typename Request, typename Response>
  void Call(std::string_view bytes,
            void (Master::*method)(const Request*, Response*, StatusCallback)) {
    Response response;
    TraceCall(Request::descriptor()->name(), Call(bytes, &response, method));
  }

  void RunStep(std::string_view bytes) {
    proto::RunStepRequest request;
    if (!Parse(bytes, &request)) return;
    proto::RunStepResponse response;
    TraceCall("RunStepRequest", CallWithDeadline([&](CallOptions* options, StatusCallback done) {
                master_->RunStepAsync(options, &request, &response, std::move(done));
              }));
  }

  FuzzWorker worker_;
  MasterEnv env_;
  std::unique_ptr<Master> master_;
  std::string last_session_;
};

}  // namespace
}  // namespace weft::fuzz

// Input: a call sequence (service_fuzz_util.h), each request parsed like the gRPC service parses
// it off the wire. Sessions place, partition, register and run their graphs on the worker for
// real; RunStep is cancelled after a short deadline. A request with an empty session handle gets
// the handle of the last session created, since handles are random and a seed must still reach
// its session.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::fuzz::FuzzMaster master;
  weft::fuzz::ForEachCall(data, size, [&](uint8_t method, std::string_view request) {
    master.RunCall(method, request);
  });
  return 0;
}
