// The elastic membership on the wire: ElasticMembershipServer serves an ElasticMembership (in the
// launcher) to the workers, which reach it through ElasticMembershipClient, one call per
// connection. Wire format (little-endian): request {uint64 magic "WEFTELRQ", uint32 json_bytes,
// uint32 reserved} + a JSON object {"method": "join" | "watch", ...}; reply {uint64 magic
// "WEFTELRP", uint32 code, uint32 payload_bytes} + the payload: JSON when code is 0, else the error
// message. Anything else on the wire is answered with (or returned as) a Status naming it.
// Both classes are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "weft/core/mutex.h"
#include "weft/core/net/connection_thread.h"
#include "weft/core/net/socket.h"
#include "weft/core/statusor.h"
#include "weft/distributed/cluster/elastic_membership.h"

namespace weft {

class ElasticMembershipServer {
 public:
  // Listens on host:port (0: ephemeral) at once; `membership` is not owned and outlives this.
  static StatusOr<std::unique_ptr<ElasticMembershipServer>> Create(ElasticMembership* membership,
                                                                   const std::string& host,
                                                                   int port = 0);
  ~ElasticMembershipServer();  // Shutdown()
  ElasticMembershipServer(const ElasticMembershipServer&) = delete;
  ElasticMembershipServer& operator=(const ElasticMembershipServer&) = delete;

  // "host:port", as workers dial it.
  const std::string& address() const { return listener_.address(); }
  // Stops accepting, wakes the calls blocked in the membership, joins the threads. Idempotent.
  void Shutdown();

 private:
  ElasticMembershipServer(ElasticMembership* membership, net::Listener listener);
  void AcceptLoop();
  void Serve(ConnectionThread* connection);

  ElasticMembership* const membership_;
  const net::Listener listener_;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  Mutex mu_;
  ConnectionThreads connections_ WEFT_GUARDED_BY(mu_);
  bool shut_down_ WEFT_GUARDED_BY(mu_) = false;
};

class ElasticMembershipClient {
 public:
  explicit ElasticMembershipClient(std::string address) : address_(std::move(address)) {}

  // ElasticMembership::Join through the server: waits up to `timeout` for the generation, or
  // until `*stopping` is set (Cancelled). Errors name the membership's address.
  StatusOr<ElasticGeneration> Join(const JoinRequest& request, std::chrono::milliseconds timeout,
                                   const std::atomic<bool>* stopping = nullptr) const;
  // ElasticMembership::Watch through the server.
  StatusOr<MembershipChange> Watch(int64_t generation, std::chrono::milliseconds timeout,
                                   const std::atomic<bool>* stopping = nullptr) const;
  const std::string& address() const { return address_; }

 private:
  // Sends `request` (JSON text) and returns the reply's payload, waiting up to `timeout`.
  StatusOr<std::string> Call(const std::string& request, std::chrono::milliseconds timeout,
                             const std::atomic<bool>* stopping) const;

  const std::string address_;
};

}  // namespace weft
