// The gRPC credentials of a TransportSecurity (transport_security.h): mutual TLS when it has a
// certificate, else insecure ones (a server then stays on loopback unless told otherwise).
// Free functions; thread-safe.
#pragma once

#include <memory>

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "weft/distributed/rpc/transport_security.h"

namespace weft {

// SSL credentials with this process's certificate when TLS is on, else insecure ones.
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TransportSecurity& security);
// SSL credentials that require and verify a client certificate when TLS is on, else insecure ones.
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TransportSecurity& security);

}  // namespace weft
