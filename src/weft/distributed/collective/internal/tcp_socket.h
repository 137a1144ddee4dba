// Sockets for the TCP collective transport: listening on an ephemeral port, and connecting the
// full mesh of a group with a handshake (magic, group token, ranks) checked on both ends. A wrong
// or garbage handshake is a Status naming the peer or the connecting address; the accepting side
// drops such a connection and keeps waiting for the right peer until the deadline. Functions here
// block the calling thread; they share no state.
#pragma once

#include <string>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/distributed/collective/collective_transport.h"
#include "weft/distributed/collective/internal/transport_util.h"

namespace weft::internal {

struct ListeningSocket {
  int fd = -1;
  std::string address;  // "host:port"
};
StatusOr<ListeningSocket> ListenOn(const std::string& host);

// Connects this member to every peer: it dials the lower ranks and accepts the higher ones on
// `listen_fd`. Returns one connected, non-blocking socket per rank (-1 at options.rank).
StatusOr<std::vector<int>> ConnectMesh(const TransportOptions& options, int listen_fd,
                                       const std::vector<std::string>& addresses,
                                       const Deadline& deadline);

// Sets TCP_NODELAY and larger buffers, and makes the socket non-blocking.
void TuneSocket(int fd);

std::string ErrnoText(int error);

}  // namespace weft::internal
