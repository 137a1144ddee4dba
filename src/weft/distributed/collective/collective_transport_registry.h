// CollectiveTransportRegistry: the collective transports by name ("shm", "tcp", "hierarchical"),
// each a factory that listens before its group is known (the address goes to the group's leader,
// which hands every member's addresses back in the group's completion) and connects a member once
// the group is resolved; and the policy that picks one for a group. A transport is added by
// registering it in RegisterCollectiveTransports: nothing else names transports. Registration
// happens before use; afterwards the registry is read-only, so lookups may come from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/distributed/collective/collective_transport.h"
#include "weft/distributed/collective/shm_transport.h"
#include "weft/distributed/collective/tcp_transport.h"

namespace weft {

// Knobs of the built-in transports (benchmarks and tests shrink slots and chunks).
struct CollectiveTransportTuning {
  ShmTransportTuning shm;
  TcpTransportTuning tcp;
};

// Everything a transport connects with, for one member of a resolved group.
struct TransportConnection {
  TransportOptions options;
  std::vector<std::string> member_hosts;        // by rank
  std::vector<std::string> member_addresses;    // this transport's address of each member, by rank
  std::unique_ptr<TransportListener> listener;  // this member's; null when the transport has none
  CollectiveTransportTuning tuning;
};

struct CollectiveTransportFactory {
  std::string name;         // "tcp": what options and the group's completion call it
  std::string description;  // "TCP": what reports and errors call it
  // Listens on `host` before the group is known. Empty when the transport needs no address.
  std::function<StatusOr<std::unique_ptr<TransportListener>>(const std::string& host)> listen;
  // Connects this member to the group (waiting up to options.timeout for the others).
  std::function<StatusOr<std::unique_ptr<CollectiveTransport>>(TransportConnection connection)>
      connect;
};

// Picks a transport's name for a group from its tasks' hosts (by task rank, one entry per task).
using TransportPolicy = std::function<std::string(const std::vector<std::string>& task_hosts)>;

// One host for every task: "shm"; one task per host: "tcp"; several hosts, some with several
// tasks: "hierarchical".
std::string DefaultTransportPolicy(const std::vector<std::string>& task_hosts);

class CollectiveTransportRegistry {
 public:
  // The process's registry, with the built-in transports registered on first use.
  static const CollectiveTransportRegistry& Global();

  // AlreadyExists when the name is taken; InvalidArgument without a name or connect.
  Status Register(CollectiveTransportFactory factory);
  // InvalidArgument naming `name` and listing the registered transports when it is not one.
  StatusOr<const CollectiveTransportFactory*> Find(const std::string& name) const;
  // The registered names, sorted.
  std::vector<std::string> Names() const;
  // `requested` when not empty, else what `policy` picks for `task_hosts`; then Find.
  StatusOr<const CollectiveTransportFactory*> Choose(
      const std::string& requested, const TransportPolicy& policy,
      const std::vector<std::string>& task_hosts) const;

 private:
  std::map<std::string, CollectiveTransportFactory> factories_;
};

// Registers the shared-memory, TCP and hierarchical transports: the one list of transports.
void RegisterCollectiveTransports(CollectiveTransportRegistry& registry);

}  // namespace weft
