// libFuzzer target: the WorkerService as a master or a peer worker reaches it, driving a fresh
// in-process Worker (distributed/worker/worker.h: GraphMgr, RendezvousMgr, collective groups) per
// input.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>

#include "service_fuzz_util.h"
#include "service_methods.h"

#include "weft/worker.pb.h"

namespace weft::fuzz {
namespace {

void FixIncarnation(std::string* key) {
  constexpr std::string_view kZero = ";0000000000000000;";
  const size_t at = key->find(kZero);
  if (at == std::string::npos) return;
  for (const Device* device : TaskResources::Get().devices->ListDevices()) {
    if (std::string_view(*key).substr(0, at) != device->name()) continue;
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx",
                  static_cast<unsigned long long>(device->incarnation()));  // NOLINT(runtime/int)
    key->replace(at + 1, 16, hex);
  }
}

// The same for the _Send and _Recv nodes of a partition: incarnation 0 becomes the real one of
// their send_device, so that a seed's _Send and RecvTensor name the same key.
void FixIncarnations(proto::RegisterGraphRequest* request) {
  for (proto::DevicePartition& partition : *request->mutable_partition()) {
    for (proto::NodeDef& node : *partition.mutable_graph_def()->mutable_node()) {
      auto incarnation = node.mutable_attr()->find("send_device_incarnation");
      auto device = node.attr().find("send_device");
      if (incarnation == node.mutable_attr()->end() || device == node.attr().end() ||
          incarnation->second.i() != 0) {
        continue;
      }
      for (const Device* local : TaskResources::Get().devices->ListDevices()) {
        if (local->name() == device->second.s()) {
          incarnation->second.set_i(static_cast<int64_t>(local->incarnation()));
        }
      }
    }
  }
}

// Parses `bytes` as `Request` and calls `method` of the worker with it; a request that does not
// parse is skipped, as the transport would answer it InvalidArgument without calling the worker.
template <typename Request, typename Response, typename Method>
void Call(Worker& worker, std::string_view bytes, Method method) {
  Request request;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  if constexpr (std::is_same_v<Request, proto::RecvTensorRequest>) {
    FixIncarnation(request.mutable_rendezvous_key());
  }
  if constexpr (std::is_same_v<Request, proto::RegisterGraphRequest>) FixIncarnations(&request);
  Response response;
  TraceCall(Request::descriptor()->name(),
            CallWithDeadline([&](CallOptions* options, StatusCallback done) {
              (worker.*method)(options, &request, &response, std::move(done));
            }));
}

void RunCall(Worker& worker, uint8_t method, std::string_view request) {
  switch (PickMethod<WorkerMethod>(method)) {
    case WorkerMethod::kGetStatus:
      return Call<proto::GetStatusRequest, proto::GetStatusResponse>(worker, request,
                                                                     &Worker::GetStatusAsync);
    case WorkerMethod::kCreateWorkerSession:
      return Call<proto::CreateWorkerSessionRequest, proto::CreateWorkerSessionResponse>(
          worker, request, &Worker::CreateWorkerSessionAsync);
    case WorkerMethod::kDeleteWorkerSession:
      return Call<proto::DeleteWorkerSessionRequest, proto::DeleteWorkerSessionResponse>(
          worker, request, &Worker::DeleteWorkerSessionAsync);
    case WorkerMethod::kRegisterGraph:
      return Call<proto::RegisterGraphRequest, proto::RegisterGraphResponse>(
          worker, request, &Worker::RegisterGraphAsync);
    case WorkerMethod::kDeregisterGraph:
      return Call<proto::DeregisterGraphRequest, proto::DeregisterGraphResponse>(
          worker, request, &Worker::DeregisterGraphAsync);
    case WorkerMethod::kRunGraph:
      return Call<proto::RunGraphRequest, proto::RunGraphResponse>(worker, request,
                                                                   &Worker::RunGraphAsync);
    case WorkerMethod::kCleanupGraph:
      return Call<proto::CleanupGraphRequest, proto::CleanupGraphResponse>(
          worker, request, &Worker::CleanupGraphAsync);
    case WorkerMethod::kRecvTensor:
      return Call<proto::RecvTensorRequest, TensorResponse>(worker, request,
                                                            &Worker::RecvTensorAsync);
    default:
      return Call<proto::CompleteGroupRequest, proto::CompleteGroupResponse>(
          worker, request, &Worker::CompleteGroupAsync);
  }
}

}  // namespace
}  // namespace weft::fuzz

// Input: a call sequence (service_fuzz_util.h), each request parsed like the gRPC service parses
// it off the wire; every method is reachable, and a call that waits (RunGraph, RecvTensor,
// CompleteGroup) is cancelled after a short deadline. RecvTensor keys whose incarnation is
// 0000000000000000, and _Send/_Recv nodes whose send_device_incarnation is 0, get the incarnation
// of this process's device they name: incarnations are random per process, and a seed must still
// get past the check.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::fuzz::FuzzWorker worker;
  weft::fuzz::ForEachCall(data, size, [&](uint8_t method, std::string_view request) {
    weft::fuzz::RunCall(*worker.worker, method, request);
  });
  return 0;
}
