// GrpcSession: the Session for targets "grpc://host:port" — a ClusterSession whose MasterService
// is reached over gRPC. RegisterGrpcSessionFactory makes NewSession serve such targets; call it
// once at start-up (the `weft` binary does). Both are thread-safe; the sessions are too. The
// master's channel uses TLS and a token as TransportSecurity says (by default, the environment's).
#pragma once

#include <memory>

#include "weft/distributed/rpc/transport_security.h"
#include "weft/runtime/session.h"

namespace weft {

// InvalidArgument naming the target when it is not "grpc://host:port".
StatusOr<std::unique_ptr<Session>> NewGrpcSession(const SessionOptions& options,
                                                  const TransportSecurity& security);
// With TransportSecurityFromEnvironment() (WEFT_TLS_CERT, ..., WEFT_TOKEN).
StatusOr<std::unique_ptr<Session>> NewGrpcSession(const SessionOptions& options);

void RegisterGrpcSessionFactory();

}  // namespace weft
