// GrpcWorkerService: serves the WorkerService methods of a server by forwarding them to the
// in-process WorkerInterface. RecvTensor replies avoid copying the value: large tensors go over
// the bulk path (a ticket in the reply), medium ones are framed into the reply without a copy of
// their content. Thread-safe; the worker, bulk server and dispatcher must outlive it, and the gRPC
// server must be shut down before it is destroyed.
#pragma once

#include <memory>

#include <grpcpp/support/byte_buffer.h>

#include "weft/core/thread_pool.h"
#include "weft/distributed/rpc/bulk_transfer.h"
#include "weft/distributed/rpc/grpc_call_dispatcher.h"
#include "weft/distributed/worker/worker_interface.h"

namespace weft {

// Tensors over this many bytes are framed into a RecvTensor reply without copying their content.
inline constexpr size_t kZeroCopyThreshold = 1024;

class GrpcWorkerService {
 public:
  // Registers the eight WorkerService methods in `dispatcher`. `bulk_server` may be null (no bulk
  // path).
  GrpcWorkerService(WorkerInterface* worker, BulkTransferServer* bulk_server,
                    GrpcCallDispatcher* dispatcher);
  ~GrpcWorkerService();  // runs the calls already handed to its threads
  GrpcWorkerService(const GrpcWorkerService&) = delete;
  GrpcWorkerService& operator=(const GrpcWorkerService&) = delete;

 private:
  void RecvTensorAsync(const grpc::ByteBuffer& request_bytes, grpc::ByteBuffer* response_bytes,
                       CallOptions* options, GrpcCallDispatcher::DoneCallback done);

  WorkerInterface* const worker_;
  BulkTransferServer* const bulk_server_;
  // Methods that may do real work inline (graph registration, session set-up) run here rather
  // than on gRPC's threads.
  std::unique_ptr<ThreadPool> pool_;
};

// The RecvTensorResponse wire bytes for `tensor`, content framed without a copy when it is over
// kZeroCopyThreshold bytes. Byte-identical to serializing the equivalent proto. ResourceExhausted
// when the tensor cannot fit in one message (the bulk data path carries such tensors).
StatusOr<grpc::ByteBuffer> EncodeRecvTensorResponse(const Tensor& tensor, bool is_dead);

}  // namespace weft
