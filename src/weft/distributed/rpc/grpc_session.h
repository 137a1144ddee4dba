// GrpcSession: the Session for targets "grpc://host:port" — a ClusterSession whose MasterService
// is reached over gRPC. RegisterGrpcSessionFactory makes NewSession serve such targets; call it
// once at start-up (the `weft` binary does). Both are thread-safe; the sessions are too.
#pragma once

#include <memory>

#include "weft/runtime/session.h"

namespace weft {

// InvalidArgument naming the target when it is not "grpc://host:port".
StatusOr<std::unique_ptr<Session>> NewGrpcSession(const SessionOptions& options);

void RegisterGrpcSessionFactory();

}  // namespace weft
