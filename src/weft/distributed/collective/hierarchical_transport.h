// The hierarchical CollectiveTransport, for groups spanning hosts with several processes on some:
// shared memory among each host's members, TCP among the hosts' leaders (each host's lowest rank).
// Results are bitwise equal on every member (the leaders compute them; each copies its to its
// host); a failure anywhere reaches every member with its code and text. Thread-safety: as
// CollectiveTransport (one caller at a time; StartAbort from any thread).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/distributed/collective/collective_transport.h"
#include "weft/distributed/collective/shm_transport.h"
#include "weft/distributed/collective/tcp_transport.h"

namespace weft {

struct HierarchicalTransportTuning {
  ShmTransportTuning shm;
  TcpTransportTuning tcp;
};

// Connects this member's host transport (token "<group_token>-h<host index>", hosts indexed in the
// order of their lowest rank) and, on a leader when there are several hosts, the leaders' TCP
// transport (token "<group_token>-leaders"), each waiting up to options.timeout. `member_hosts`
// names each member's host, by rank; `member_addresses` holds listener addresses by rank, of which
// only the leaders' are dialled. A leader needs `listener`; a non-leader's is closed.
StatusOr<std::unique_ptr<CollectiveTransport>> CreateHierarchicalTransport(
    const TransportOptions& options, const std::vector<std::string>& member_hosts,
    std::unique_ptr<TcpTransportListener> listener,
    const std::vector<std::string>& member_addresses);
StatusOr<std::unique_ptr<CollectiveTransport>> CreateHierarchicalTransport(
    const TransportOptions& options, const std::vector<std::string>& member_hosts,
    std::unique_ptr<TcpTransportListener> listener,
    const std::vector<std::string>& member_addresses, const HierarchicalTransportTuning& tuning);

}  // namespace weft
