// Conversions between Weft's and gRPC's vocabulary: Status codes (the same numbers on both sides),
// protos to and from grpc::ByteBuffer, and the channel arguments every Weft channel uses. Free
// functions without state; thread-safe.
#pragma once

#include <memory>
#include <string>

#include <google/protobuf/message_lite.h>
#include <grpcpp/channel.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/channel_arguments.h>
#include <grpcpp/support/status.h>

#include "weft/core/status.h"

namespace weft {

grpc::Status ToGrpcStatus(const Status& status);
Status FromGrpcStatus(const grpc::Status& status);

// Serializes `message` into slices gRPC can send without another copy.
grpc::ByteBuffer SerializeToByteBuffer(const google::protobuf::MessageLite& message);
// Parses `buffer` into `message`; malformed bytes are an InvalidArgument naming the message type
// and the byte count.
Status ParseFromByteBuffer(const grpc::ByteBuffer& buffer, google::protobuf::MessageLite* message);
// The bytes of `buffer` in one string (tests and diagnostics; copies).
std::string ByteBufferToString(const grpc::ByteBuffer& buffer);

// Unlimited message sizes, and a short reconnect backoff (100 ms, at most 1 s; each connection
// attempt may take 5 s) so that a restarted worker is reached again quickly.
grpc::ChannelArguments WeftChannelArguments();
// An insecure channel to "host:port" with WeftChannelArguments().
std::shared_ptr<grpc::Channel> NewWeftChannel(const std::string& address);

// Keeps gRPC's shared callback completion queue alive for the rest of the process. gRPC 1.51
// tears that queue down whenever the last channel or server using it goes away and builds it
// again for the next one; a process that starts and stops servers repeatedly (tests, restarts)
// then meets a double free inside gRPC on the teardown. NewWeftChannel calls this; call it before
// building a server. Thread-safe; the first call makes one call to a closed port (milliseconds).
void RetainCallbackCompletionQueue();

// Splits "host:port" (also "[v6]:port"); the host is "" when `address` has no ':'.
std::string HostOfAddress(const std::string& address);

}  // namespace weft
