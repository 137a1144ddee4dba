// gRPC credentials from a TransportSecurity; see grpc_credentials.h.
#include "weft/distributed/rpc/grpc_credentials.h"

namespace weft {

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(
    const TransportSecurity& security) {
  if (!security.tls()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = security.root_certificates;
  options.pem_private_key = security.private_key;
  options.pem_cert_chain = security.certificate_chain;
  return grpc::SslCredentials(options);
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TransportSecurity& security) {
  if (!security.tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = security.root_certificates;
  options.pem_key_cert_pairs.push_back({security.private_key, security.certificate_chain});
  return grpc::SslServerCredentials(options);
}

}  // namespace weft
