// CollectiveTransportRegistry (see the header): a map by name, and the built-in transports'
// entries.
#include "weft/distributed/collective/collective_transport_registry.h"

#include <set>
#include <utility>

#include "weft/core/logging.h"
#include "weft/core/str_util.h"
#include "weft/distributed/collective/hierarchical_transport.h"

namespace weft {
namespace {

StatusOr<std::unique_ptr<TransportListener>> ListenTcp(const std::string& host) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<TcpTransportListener> listener,
                        TcpTransportListener::Listen(host));
  return std::unique_ptr<TransportListener>(std::move(listener));
}

// The listener `connection` carries, as the TCP listener ListenTcp made.
StatusOr<std::unique_ptr<TcpTransportListener>> TakeTcpListener(TransportConnection& connection,
                                                                const char* transport) {
  auto* tcp = dynamic_cast<TcpTransportListener*>(connection.listener.get());
  if (tcp == nullptr) {
    return InvalidArgument(transport, " transport of group '", connection.options.group_token,
                           "': member ", connection.options.rank, " has no TCP listener");
  }
  connection.listener.release();
  return std::unique_ptr<TcpTransportListener>(tcp);
}

}  // namespace

std::string DefaultTransportPolicy(const std::vector<std::string>& task_hosts) {
  const std::set<std::string> hosts(task_hosts.begin(), task_hosts.end());
  if (hosts.size() == task_hosts.size()) return "tcp";  // every host runs one task
  if (hosts.size() == 1) return "shm";
  return "hierarchical";
}

const CollectiveTransportRegistry& CollectiveTransportRegistry::Global() {
  static const CollectiveTransportRegistry* const registry = [] {
    auto* made = new CollectiveTransportRegistry();
    RegisterCollectiveTransports(*made);
    return made;
  }();
  return *registry;
}

Status CollectiveTransportRegistry::Register(CollectiveTransportFactory factory) {
  if (factory.name.empty() || !factory.connect) {
    return InvalidArgument("collective transport '", factory.name, "' needs a name and a connect");
  }
  if (factories_.count(factory.name) != 0) {
    return AlreadyExists("collective transport '", factory.name, "' is already registered");
  }
  std::string name = factory.name;
  factories_.emplace(std::move(name), std::move(factory));
  return Status::OK();
}

StatusOr<const CollectiveTransportFactory*> CollectiveTransportRegistry::Find(
    const std::string& name) const {
  auto found = factories_.find(name);
  if (found != factories_.end()) return &found->second;
  return InvalidArgument("no collective transport named '", name,
                         "'; registered: ", StrJoin(Names(), ", "));
}

std::vector<std::string> CollectiveTransportRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories_) names.push_back(name);
  return names;
}

StatusOr<const CollectiveTransportFactory*> CollectiveTransportRegistry::Choose(
    const std::string& requested, const TransportPolicy& policy,
    const std::vector<std::string>& task_hosts) const {
  if (!requested.empty()) return Find(requested);
  return Find(policy ? policy(task_hosts) : DefaultTransportPolicy(task_hosts));
}

void RegisterCollectiveTransports(CollectiveTransportRegistry& registry) {
  CollectiveTransportFactory shm;
  shm.name = "shm";
  shm.description = "shared memory";
  shm.connect = [](TransportConnection connection) {
    return CreateShmTransport(connection.options, connection.tuning.shm);
  };
  CollectiveTransportFactory tcp;
  tcp.name = "tcp";
  tcp.description = "TCP";
  tcp.listen = ListenTcp;
  tcp.connect =
      [](TransportConnection connection) -> StatusOr<std::unique_ptr<CollectiveTransport>> {
    WEFT_ASSIGN_OR_RETURN(auto listener, TakeTcpListener(connection, "TCP"));
    return CreateTcpTransport(connection.options, std::move(listener), connection.member_addresses,
                              connection.tuning.tcp);
  };
  CollectiveTransportFactory hierarchical;
  hierarchical.name = "hierarchical";
  hierarchical.description = "shared memory in each host, TCP between hosts";
  hierarchical.listen = ListenTcp;
  hierarchical.connect =
      [](TransportConnection connection) -> StatusOr<std::unique_ptr<CollectiveTransport>> {
    // Only the hosts' leaders dial one another: the others' listeners close unused.
    std::unique_ptr<TcpTransportListener> listener;
    if (connection.listener != nullptr) {
      WEFT_ASSIGN_OR_RETURN(listener, TakeTcpListener(connection, "hierarchical"));
    }
    return CreateHierarchicalTransport(connection.options, connection.member_hosts,
                                       std::move(listener), connection.member_addresses,
                                       {connection.tuning.shm, connection.tuning.tcp});
  };
  for (CollectiveTransportFactory* factory : {&shm, &tcp, &hierarchical}) {
    Status status = registry.Register(std::move(*factory));
    WEFT_CHECK(status.ok()) << status;
  }
}

}  // namespace weft
