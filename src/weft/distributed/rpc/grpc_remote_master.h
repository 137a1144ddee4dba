// NewGrpcRemoteMaster: the MasterInterface of a server, over gRPC (blocking calls on the caller's
// thread). A CallOptions' deadline becomes the call's deadline and cancelling it cancels the
// call; CreateSession and ListDevices wait for the server to come up until their deadline. Errors
// keep gRPC's code and name the method and address. The channel uses `security`'s TLS, and every
// call carries its token. Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "weft/distributed/master/master_interface.h"
#include "weft/distributed/rpc/transport_security.h"

namespace weft {

std::unique_ptr<MasterInterface> NewGrpcRemoteMaster(std::string address,
                                                     const TransportSecurity& security);

}  // namespace weft
