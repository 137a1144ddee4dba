// Conversions between Weft's and gRPC's vocabulary: Status codes (the same numbers on both sides),
// protos to and from grpc::ByteBuffer, and the channel arguments every Weft channel uses. Free
// functions without state; thread-safe.
#pragma once

#include <climits>
#include <cstddef>
#include <memory>
#include <string>

#include <google/protobuf/message_lite.h>
#include <grpcpp/channel.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/channel_arguments.h>
#include <grpcpp/support/status.h>

#include "weft/core/status.h"
#include "weft/core/statusor.h"
#include "weft/distributed/rpc/transport_security.h"

namespace weft {

grpc::Status ToGrpcStatus(const Status& status);
Status FromGrpcStatus(const grpc::Status& status);

// The most bytes one RPC message may hold: protobuf's limit on a serialized message.
inline constexpr size_t kMaxMessageBytes = INT_MAX;

// OK when `message` serializes to at most `limit` bytes; else ResourceExhausted naming the message
// type and size and, for the messages that carry a step's tensors (RunStep and RunGraph requests
// and responses), the largest tensor in it by name, as a feed or a fetch.
Status CheckMessageSize(const google::protobuf::MessageLite& message,
                        size_t limit = kMaxMessageBytes);
// Serializes `message` into slices gRPC can send without another copy; CheckMessageSize's error
// when it does not fit in one message.
StatusOr<grpc::ByteBuffer> SerializeToByteBuffer(const google::protobuf::MessageLite& message);
// Parses `buffer` into `message`; malformed bytes are an InvalidArgument naming the message type
// and the byte count.
Status ParseFromByteBuffer(const grpc::ByteBuffer& buffer, google::protobuf::MessageLite* message);
// The bytes of `buffer` in one string (tests and diagnostics; copies).
std::string ByteBufferToString(const grpc::ByteBuffer& buffer);

// Unlimited message sizes, and a short reconnect backoff (100 ms, at most 1 s; each connection
// attempt may take 5 s) so that a restarted worker is reached again quickly.
grpc::ChannelArguments WeftChannelArguments();
// A channel to "host:port" with WeftChannelArguments(), over TLS when `security` has it (the
// token travels with each call: see GrpcRemoteWorker and GrpcRemoteMaster).
std::shared_ptr<grpc::Channel> NewWeftChannel(const std::string& address,
                                              const TransportSecurity& security);

// Keeps gRPC's shared callback completion queue alive for the rest of the process. gRPC 1.51
// tears that queue down whenever the last channel or server using it goes away and builds it
// again for the next one; a process that starts and stops servers repeatedly (tests, restarts)
// then meets a double free inside gRPC on the teardown. NewWeftChannel calls this; call it before
// building a server. Thread-safe; the first call makes one call to a closed port (milliseconds).
void RetainCallbackCompletionQueue();

// Splits "host:port" (also "[v6]:port"); the host is "" when `address` has no ':'.
std::string HostOfAddress(const std::string& address);

}  // namespace weft
