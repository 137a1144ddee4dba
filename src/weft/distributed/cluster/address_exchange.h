// The address exchange: the rendezvous of workers that Slurm or Open MPI started without a cluster:
// each worker tells the coordinator its rank and its own reachable address, and once all
// `world_size` ranks have registered every worker receives the whole list, in rank order. A rank
// that has not registered by the coordinator's deadline is named in the error every waiting worker
// gets.
//
// Wire format (little-endian, one exchange per connection): request {uint64 magic "WEFTCREQ",
// uint32 rank, uint32 world_size, uint32 address_bytes} + the address; reply {uint64 magic
// "WEFTCRPL", uint32 code, uint32 payload_bytes} + the payload: the addresses joined by '\n' when
// code is 0, else the error message. Anything else on the wire is answered with (or returned as) a
// Status. AddressExchangeServer and ExchangeAddresses are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/net/connection_thread.h"
#include "weft/core/net/socket.h"
#include "weft/core/statusor.h"
#include "weft/distributed/cluster/cluster_resolver.h"

namespace weft {

class AddressExchangeServer {
 public:
  struct Options {
    std::string host = "127.0.0.1";  // the interface to listen on ("0.0.0.0": all)
    int port = 0;                    // 0: an ephemeral port
    int world_size = 1;
    // From Create(): how long ranks may take to register before the waiting ones are told who is
    // missing.
    int64_t timeout_ms = 60000;
  };

  // Listens at once; errors name the host and port.
  static StatusOr<std::unique_ptr<AddressExchangeServer>> Create(const Options& options);
  ~AddressExchangeServer();  // Shutdown()
  AddressExchangeServer(const AddressExchangeServer&) = delete;
  AddressExchangeServer& operator=(const AddressExchangeServer&) = delete;

  int port() const { return listener_.port(); }
  // Closes the listener, tells waiting workers the coordinator stopped, joins the threads.
  // Idempotent.
  void Shutdown();

 private:
  using Connection = ConnectionThread;

  AddressExchangeServer(net::Listener listener, const Options& options);
  void AcceptLoop();
  void Serve(Connection* connection);
  // The reply for one well-formed request: the list, or why not.
  StatusOr<std::string> Register(int rank, const std::string& address);
  void ReapFinishedLocked() WEFT_REQUIRES(mu_);

  const net::Listener listener_;
  const Options options_;
  const std::chrono::steady_clock::time_point deadline_;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;

  Mutex mu_;
  CondVar changed_;
  std::vector<std::string> addresses_ WEFT_GUARDED_BY(mu_);  // "" until that rank registers
  int registered_ WEFT_GUARDED_BY(mu_) = 0;
  ConnectionThreads connections_ WEFT_GUARDED_BY(mu_);
  bool shut_down_ WEFT_GUARDED_BY(mu_) = false;
};

struct AddressExchangeOptions {
  std::string coordinator;  // "host:port"
  int rank = 0;
  int world_size = 1;
  std::string address;  // this worker's "host:port" as the others should dial it
  // Connection attempts repeat until then (the coordinator may start after this worker); the
  // reply is awaited a little longer, so that the coordinator's own deadline error arrives first.
  int64_t timeout_ms = 60000;
};

// Registers and returns every rank's address, in rank order. Errors name the coordinator.
StatusOr<std::vector<std::string>> ExchangeAddresses(const AddressExchangeOptions& options);

// A worker's whole rendezvous: rank 0 hosts the coordinator on the coordinator address's port
// (on every interface, or on loopback when the address is 127.0.0.1 or localhost) and keeps it in
// `*hosted` (it must outlive the others' replies); then every rank registers `own_address`.
// Returns the "worker" job of the cluster, task i at rank i's address.
StatusOr<ClusterSpec> RendezvousCluster(const ResolvedCluster& resolved,
                                        const std::string& own_address, int64_t timeout_ms,
                                        std::unique_ptr<AddressExchangeServer>* hosted);

}  // namespace weft
