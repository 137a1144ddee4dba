// The hierarchical CollectiveTransport: for groups spread over several hosts with several member
// processes on some of them. Members are grouped by host; the members of one host share a
// shared-memory transport, and each host's leader (its lowest rank) joins a TCP transport among the
// hosts' leaders. An all-reduce sums inside each host, then across the leaders, and the leader
// copies the result to its host, so every member gets the leaders' bits. Members of one host need
// not be contiguous in rank order. A failure in one stage travels to every member as a status (the
// leaders exchange theirs before moving data; each leader hands its own to its host), keeping its
// code and text; errors name members by their group names and ranks. Thread-safety: as
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
