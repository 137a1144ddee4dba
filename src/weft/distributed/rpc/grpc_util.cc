#include "weft/distributed/rpc/grpc_util.h"

#include <vector>

#include <absl/synchronization/mutex.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include "weft/core/logging.h"
#include "weft/core/notification.h"
#include "weft/core/str_util.h"
#include "weft/distributed/rpc/grpc_credentials.h"
#include "weft/master.pb.h"
#include "weft/worker.pb.h"

namespace weft {
namespace {

// The largest of `tensors`, described as "<role> '<name>' (<bytes> bytes)"; "" when empty.
std::string LargestTensor(
    const google::protobuf::RepeatedPtrField<proto::NamedTensorProto>& tensors, const char* role) {
  const proto::NamedTensorProto* largest = nullptr;
  size_t largest_bytes = 0;
  for (const proto::NamedTensorProto& tensor : tensors) {
    const size_t bytes = tensor.tensor().ByteSizeLong();
    if (largest == nullptr || bytes > largest_bytes) {
      largest = &tensor;
      largest_bytes = bytes;
    }
  }
  if (largest == nullptr) return "";
  return StrCat(role, " '", largest->name(), "' (", largest_bytes, " bytes)");
}

std::string LargestTensorIn(const google::protobuf::MessageLite& message) {
  if (auto* m = dynamic_cast<const proto::RunStepRequest*>(&message)) {
    return LargestTensor(m->feed(), "feed");
  }
  if (auto* m = dynamic_cast<const proto::RunStepResponse*>(&message)) {
    return LargestTensor(m->tensor(), "fetch");
  }
  if (auto* m = dynamic_cast<const proto::RunGraphRequest*>(&message)) {
    return LargestTensor(m->send(), "feed");
  }
  if (auto* m = dynamic_cast<const proto::RunGraphResponse*>(&message)) {
    return LargestTensor(m->recv(), "fetch");
  }
  return "";
}

}  // namespace

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(status.code())),
                      status.message());
}

Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return Status::OK();
  int code = static_cast<int>(status.error_code());
  // A code outside the canonical range can only come from a foreign peer.
  if (code < 1 || code > static_cast<int>(Code::kUnauthenticated)) {
    code = static_cast<int>(Code::kUnknown);
  }
  return Status(static_cast<Code>(code), status.error_message());
}

Status CheckMessageSize(const google::protobuf::MessageLite& message, size_t limit) {
  const size_t size = message.ByteSizeLong();
  if (size <= limit) return Status::OK();
  const std::string largest = LargestTensorIn(message);
  return ResourceExhausted(largest.empty() ? "" : StrCat(largest, " makes "), "a ",
                           message.GetTypeName(), " of ", size, " bytes, over the ", limit,
                           "-byte limit of one RPC message");
}

StatusOr<grpc::ByteBuffer> SerializeToByteBuffer(const google::protobuf::MessageLite& message) {
  WEFT_RETURN_IF_ERROR(CheckMessageSize(message));
  const size_t size = message.ByteSizeLong();
  if (size == 0) {
    // A ByteBuffer with no slices is not a message gRPC can send.
    grpc::Slice empty;
    return grpc::ByteBuffer(&empty, 1);
  }
  grpc::ByteBuffer buffer;
  grpc::ProtoBufferWriter writer(&buffer, grpc::kProtoBufferWriterMaxBufferLength,
                                 static_cast<int>(size));
  if (!message.SerializeToZeroCopyStream(&writer)) {
    return Internal("cannot serialize a ", message.GetTypeName(), " of ", size, " bytes");
  }
  return buffer;
}

Status ParseFromByteBuffer(const grpc::ByteBuffer& buffer, google::protobuf::MessageLite* message) {
  // The reader consumes its buffer; a copy only takes references to the slices.
  grpc::ByteBuffer copy(buffer);
  const size_t num_bytes = copy.Length();
  grpc::ProtoBufferReader reader(&copy);
  if (!reader.status().ok() || !message->ParseFromZeroCopyStream(&reader)) {
    return InvalidArgument("cannot parse ", num_bytes, " bytes as a ", message->GetTypeName());
  }
  return Status::OK();
}

std::string ByteBufferToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& slice : slices) {
    out.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return out;
}

grpc::ChannelArguments WeftChannelArguments() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  // gRPC also takes this as the least time a connection attempt gets before it is abandoned: long
  // enough for a loaded peer to finish the HTTP/2 handshake (100 ms failed under valgrind).
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Weft retries nothing at the transport level (a failed RunGraph fails its step), and gRPC's
  // retry machinery costs every call; measured ~20% off a small call's latency here.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  return args;
}

void RetainCallbackCompletionQueue() {
  static const bool retained = [] {
    // Debian's Abseil checks every gRPC mutex acquisition for lock-order cycles (a debugging aid
    // that showed in profiles of small RPCs); Weft's own locks do not use absl::Mutex.
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    // A channel that has made one callback call holds a reference on the shared queue until it
    // is destroyed, which this one never is. The call fails at once (its deadline has passed).
    // Held through a static pointer so that leak checkers see it as reachable.
    static auto* const channel = new std::shared_ptr<grpc::Channel>(
        grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()));
    grpc::GenericStub stub(*channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now());
    grpc::Slice empty;
    grpc::ByteBuffer request(&empty, 1);
    grpc::ByteBuffer response;
    Notification finished;
    stub.UnaryCall(&context, "/weft.Retain/Retain", grpc::StubOptions(), &request, &response,
                   [&finished](grpc::Status) { finished.Notify(); });
    finished.WaitForNotification();
    return true;
  }();
  (void)retained;
}

std::shared_ptr<grpc::Channel> NewWeftChannel(const std::string& address,
                                              const TransportSecurity& security) {
  RetainCallbackCompletionQueue();
  return grpc::CreateCustomChannel(address, MakeChannelCredentials(security),
                                   WeftChannelArguments());
}

std::string HostOfAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return "";
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace weft
