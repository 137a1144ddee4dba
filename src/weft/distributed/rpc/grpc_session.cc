#include "weft/distributed/rpc/grpc_session.h"

#include "weft/distributed/master/cluster_session.h"
#include "weft/distributed/rpc/grpc_remote_master.h"

namespace weft {
namespace {

constexpr std::string_view kScheme = "grpc://";

}  // namespace

StatusOr<std::unique_ptr<Session>> NewGrpcSession(const SessionOptions& options,
                                                  const TransportSecurity& security) {
  const std::string& target = options.target;
  if (!target.starts_with(kScheme) || target.size() == kScheme.size() ||
      target.find(':', kScheme.size()) == std::string::npos) {
    return InvalidArgument("target '", target, "' is not of the form grpc://host:port");
  }
  std::string address = target.substr(kScheme.size());
  return NewClusterSession(NewGrpcRemoteMaster(std::move(address), security), options);
}

StatusOr<std::unique_ptr<Session>> NewGrpcSession(const SessionOptions& options) {
  WEFT_ASSIGN_OR_RETURN(TransportSecurity security, TransportSecurityFromEnvironment());
  return NewGrpcSession(options, security);
}

void RegisterGrpcSessionFactory() {
  RegisterSessionFactory(std::string(kScheme),
                         [](const SessionOptions& options) { return NewGrpcSession(options); });
}

}  // namespace weft
