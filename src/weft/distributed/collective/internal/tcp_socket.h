// Connecting the full mesh of a TCP collective group over the socket layer (core/net/socket.h),
// with a handshake (the token hello carrying the group token, then the ranks) checked on both ends.
// A wrong or garbage handshake is a Status naming the peer or the connecting address; the accepting
// side drops such a connection and keeps waiting for the right peer until the deadline. Functions
// here block the calling thread; they share no state.
#pragma once

#include <string>
#include <vector>

#include "weft/core/net/socket.h"
#include "weft/core/statusor.h"
#include "weft/distributed/collective/collective_transport.h"
#include "weft/distributed/collective/internal/transport_util.h"

namespace weft::internal {

using net::ErrnoText;

// Connects this member to every peer: it dials the lower ranks and accepts the higher ones on
// `listener`. Returns one connected, tuned, non-blocking descriptor per rank (-1 at options.rank),
// owned by the caller.
StatusOr<std::vector<int>> ConnectMesh(const TransportOptions& options,
                                       const net::Listener& listener,
                                       const std::vector<std::string>& addresses,
                                       const Deadline& deadline);

}  // namespace weft::internal
