#include "weft/distributed/rpc/grpc_worker_service.h"

#include <string>
#include <utility>

#include "weft/framework/tensor_proto_util.h"

namespace weft {
namespace {

constexpr char kService[] = "weft.proto.WorkerService";

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

size_t VarintSize(uint64_t value) {
  size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

// Wire tags: (field number << 3) | wire type.
constexpr char kTagResponseTensor = (1 << 3) | 2;
constexpr char kTagResponseIsDead = (2 << 3) | 0;
constexpr char kTagTensorDtype = (1 << 3) | 0;
constexpr char kTagTensorShape = (2 << 3) | 2;
constexpr char kTagTensorContent = (3 << 3) | 2;

void DeleteTensor(void* tensor) { delete static_cast<Tensor*>(tensor); }

}  // namespace

StatusOr<grpc::ByteBuffer> EncodeRecvTensorResponse(const Tensor& tensor, bool is_dead) {
  const size_t content_bytes = tensor.TotalBytes();
  // The header fields take well under a kilobyte.
  if (content_bytes > kMaxMessageBytes - 1024) {
    return ResourceExhausted("a tensor of ", content_bytes, " bytes (", tensor.shape(),
                             ") does not fit in one RecvTensor response (at most ",
                             kMaxMessageBytes, " bytes); only the bulk data path carries it");
  }
  if (content_bytes <= kZeroCopyThreshold) {
    proto::RecvTensorResponse response;
    *response.mutable_tensor() = ToProto(tensor);
    response.set_is_dead(is_dead);
    return SerializeToByteBuffer(response);
  }
  // The fields before tensor_content, then the content as a slice over the tensor's own buffer,
  // then is_dead: the order a protobuf serializer writes them in.
  std::string head;
  const uint64_t dtype = static_cast<uint64_t>(ToProto(tensor.dtype()));
  const std::string shape = ToProto(tensor.shape()).SerializeAsString();
  size_t tensor_proto_bytes = 0;
  if (dtype != 0) tensor_proto_bytes += 1 + VarintSize(dtype);
  if (!shape.empty()) tensor_proto_bytes += 1 + VarintSize(shape.size()) + shape.size();
  tensor_proto_bytes += 1 + VarintSize(content_bytes) + content_bytes;
  head.push_back(kTagResponseTensor);
  AppendVarint(tensor_proto_bytes, &head);
  if (dtype != 0) {
    head.push_back(kTagTensorDtype);
    AppendVarint(dtype, &head);
  }
  if (!shape.empty()) {
    head.push_back(kTagTensorShape);
    AppendVarint(shape.size(), &head);
    head.append(shape);
  }
  head.push_back(kTagTensorContent);
  AppendVarint(content_bytes, &head);

  // The slice keeps its own reference to the buffer until gRPC has sent it.
  auto* reference = new Tensor(tensor);
  grpc::Slice slices[3] = {
      grpc::Slice(head),
      grpc::Slice(const_cast<void*>(reference->raw_data()), content_bytes, &DeleteTensor,
                  reference),
      grpc::Slice(),
  };
  size_t num_slices = 2;
  if (is_dead) {
    const char tail[2] = {kTagResponseIsDead, 1};
    slices[2] = grpc::Slice(tail, sizeof(tail));
    num_slices = 3;
  }
  return grpc::ByteBuffer(slices, num_slices);
}

GrpcWorkerService::GrpcWorkerService(WorkerInterface* worker, BulkTransferServer* bulk_server,
                                     GrpcCallDispatcher* dispatcher)
    : worker_(worker),
      bulk_server_(bulk_server),
      pool_(std::make_unique<ThreadPool>("grpc_worker_service", 4)) {
  // Set-up calls (sessions, registration) may do real work and run on the service's pool; the
  // calls of every step (RunGraph, CleanupGraph) and GetStatus never block and run on the gRPC
  // thread: a hop to another thread costs a wake-up (~30 us here) per call.
  ThreadPool* pool = pool_.get();
  RegisterTypedMethod<proto::GetStatusRequest, proto::GetStatusResponse>(
      dispatcher, kService, "GetStatus", /*pool=*/nullptr,
      [worker](CallOptions* options, const proto::GetStatusRequest* request,
               proto::GetStatusResponse* response, StatusCallback done) {
        worker->GetStatusAsync(options, request, response, std::move(done));
      });
  RegisterTypedMethod<proto::CreateWorkerSessionRequest, proto::CreateWorkerSessionResponse>(
      dispatcher, kService, "CreateWorkerSession", pool,
      [worker](CallOptions* options, const proto::CreateWorkerSessionRequest* request,
               proto::CreateWorkerSessionResponse* response, StatusCallback done) {
        worker->CreateWorkerSessionAsync(options, request, response, std::move(done));
      });
  RegisterTypedMethod<proto::DeleteWorkerSessionRequest, proto::DeleteWorkerSessionResponse>(
      dispatcher, kService, "DeleteWorkerSession", pool,
      [worker](CallOptions* options, const proto::DeleteWorkerSessionRequest* request,
               proto::DeleteWorkerSessionResponse* response, StatusCallback done) {
        worker->DeleteWorkerSessionAsync(options, request, response, std::move(done));
      });
  RegisterTypedMethod<proto::RegisterGraphRequest, proto::RegisterGraphResponse>(
      dispatcher, kService, "RegisterGraph", pool,
      [worker](CallOptions* options, const proto::RegisterGraphRequest* request,
               proto::RegisterGraphResponse* response, StatusCallback done) {
        worker->RegisterGraphAsync(options, request, response, std::move(done));
      });
  RegisterTypedMethod<proto::DeregisterGraphRequest, proto::DeregisterGraphResponse>(
      dispatcher, kService, "DeregisterGraph", pool,
      [worker](CallOptions* options, const proto::DeregisterGraphRequest* request,
               proto::DeregisterGraphResponse* response, StatusCallback done) {
        worker->DeregisterGraphAsync(options, request, response, std::move(done));
      });
  RegisterTypedMethod<proto::RunGraphRequest, proto::RunGraphResponse>(
      dispatcher, kService, "RunGraph", /*pool=*/nullptr,
      [worker](CallOptions* options, const proto::RunGraphRequest* request,
               proto::RunGraphResponse* response, StatusCallback done) {
        worker->RunGraphAsync(options, request, response, std::move(done));
      });
  RegisterTypedMethod<proto::CleanupGraphRequest, proto::CleanupGraphResponse>(
      dispatcher, kService, "CleanupGraph", /*pool=*/nullptr,
      [worker, bulk_server](CallOptions* options, const proto::CleanupGraphRequest* request,
                            proto::CleanupGraphResponse* response, StatusCallback done) {
        if (bulk_server != nullptr) bulk_server->ReleaseStep(request->step_id());
        worker->CleanupGraphAsync(options, request, response, std::move(done));
      });
  // Waits for the rest of the group, so it holds no gRPC thread meanwhile (the leader answers).
  RegisterTypedMethod<proto::CompleteGroupRequest, proto::CompleteGroupResponse>(
      dispatcher, kService, "CompleteGroup", /*pool=*/nullptr,
      [worker](CallOptions* options, const proto::CompleteGroupRequest* request,
               proto::CompleteGroupResponse* response, StatusCallback done) {
        worker->CompleteGroupAsync(options, request, response, std::move(done));
      });
  dispatcher->RegisterMethod(std::string("/") + kService + "/RecvTensor",
                             [this](const grpc::ByteBuffer& request, grpc::ByteBuffer* response,
                                    CallOptions* options, GrpcCallDispatcher::DoneCallback done) {
                               RecvTensorAsync(request, response, options, std::move(done));
                             });
}

GrpcWorkerService::~GrpcWorkerService() = default;

void GrpcWorkerService::RecvTensorAsync(const grpc::ByteBuffer& request_bytes,
                                        grpc::ByteBuffer* response_bytes, CallOptions* options,
                                        GrpcCallDispatcher::DoneCallback done) {
  struct Call {
    proto::RecvTensorRequest request;
    TensorResponse response;
  };
  auto call = std::make_shared<Call>();
  Status parsed = ParseFromByteBuffer(request_bytes, &call->request);
  if (!parsed.ok()) {
    done(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      "malformed RecvTensor request: " + parsed.message()));
    return;
  }
  // Waiting for the value is asynchronous, so the gRPC thread is not held.
  BulkTransferServer* bulk_server = bulk_server_;
  worker_->RecvTensorAsync(
      options, &call->request, &call->response,
      [call, response_bytes, bulk_server, done = std::move(done)](const Status& status) {
        if (!status.ok()) {
          done(ToGrpcStatus(status));
          return;
        }
        const Tensor& tensor = call->response.tensor;
        const size_t num_bytes = tensor.TotalBytes();
        if (bulk_server != nullptr && call->request.bulk_ok() && num_bytes >= kBulkThreshold) {
          proto::RecvTensorResponse response;
          response.mutable_tensor()->set_dtype(ToProto(tensor.dtype()));
          *response.mutable_tensor()->mutable_tensor_shape() = ToProto(tensor.shape());
          response.set_is_dead(call->response.is_dead);
          proto::BulkTransfer* bulk = response.mutable_bulk();
          bulk->set_ticket(bulk_server->Offer(call->request.step_id(), tensor));
          bulk->set_port(bulk_server->port());
          bulk->set_num_bytes(static_cast<int64_t>(num_bytes));
          StatusOr<grpc::ByteBuffer> bytes = SerializeToByteBuffer(response);
          if (bytes.ok()) *response_bytes = std::move(*bytes);
          done(ToGrpcStatus(bytes.status()));
          return;
        }
        StatusOr<grpc::ByteBuffer> bytes = EncodeRecvTensorResponse(tensor, call->response.is_dead);
        if (!bytes.ok()) {
          done(ToGrpcStatus(bytes.status().WithContext(
              StrCat("RecvTensor '", call->request.rendezvous_key(), "'"))));
          return;
        }
        *response_bytes = std::move(*bytes);
        done(grpc::Status::OK);
      });
}

}  // namespace weft
