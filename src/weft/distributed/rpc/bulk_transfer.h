// The bulk data path beside gRPC: large RecvTensor values travel as raw bytes over plain TCP, which
// loopback moves several times faster than a gRPC message. The worker that holds a value Offers it
// to its BulkTransferServer and sends the ticket in the RecvTensor reply; the receiver's
// BulkTransferClient fetches the bytes by ticket straight into the destination tensor.
//
// Wire format (little-endian, fixed size): request {uint64 magic, uint64 ticket}; reply {uint64
// magic, uint32 code, uint32 reserved, uint64 num_bytes} followed by num_bytes raw bytes when code
// is 0. Each ticket can be fetched once. A server with a token first needs, on each connection,
// hello {uint64 magic "WEFTAUTH", uint32 token_bytes, uint32 reserved} + the token, answered by a
// reply with code 0 or UNAUTHENTICATED (then it hangs up). Tickets are random 64-bit numbers
// from the system's entropy source, handed out only in RecvTensor replies — over TLS when TLS is
// on, so the plain bytes on this port go only to a peer a TLS-authenticated RPC named. Both
// classes are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "weft/core/mutex.h"
#include "weft/core/net/connection_thread.h"
#include "weft/core/net/socket.h"
#include "weft/core/status.h"
#include "weft/core/statusor.h"
#include "weft/core/tensor.h"
#include "weft/core/thread_pool.h"

namespace weft {

// Tensors of at least this many bytes go over the bulk path when the receiver allows it.
inline constexpr size_t kBulkThreshold = 64 * 1024;

inline constexpr uint64_t kBulkRequestMagic = 0x5745465442554c4bULL;  // "WEFTBULK"
inline constexpr uint64_t kBulkReplyMagic = 0x5745465452504c59ULL;    // "WEFTRPLY"
inline constexpr uint64_t kBulkHelloMagic = 0x5745465441555448ULL;    // "WEFTAUTH"
// A hello announcing a longer token is refused unread.
inline constexpr uint32_t kMaxBulkTokenBytes = 4096;

class BulkTransferServer {
 public:
  struct Options {
    std::string host = "127.0.0.1";
    int port = 0;  // 0: an ephemeral port
    int max_connections = 64;
    std::string token;  // required in each connection's hello when not empty
  };

  // Listens at once; errors name the host and port.
  static StatusOr<std::unique_ptr<BulkTransferServer>> Create(const Options& options);
  ~BulkTransferServer();  // Shutdown()
  BulkTransferServer(const BulkTransferServer&) = delete;
  BulkTransferServer& operator=(const BulkTransferServer&) = delete;

  int port() const { return listener_.port(); }

  // Keeps a reference to `tensor`'s buffer (no copy) until fetched or the step is released;
  // returns the ticket to fetch it with.
  uint64_t Offer(int64_t step_id, const Tensor& tensor);
  // Drops the step's tickets not fetched yet.
  void ReleaseStep(int64_t step_id);
  // Number of tickets not fetched yet (for tests).
  size_t NumOffered() const;
  // Closes the listener and every connection and joins the threads. Idempotent.
  void Shutdown();

 private:
  struct Offered {
    int64_t step_id;
    Tensor tensor;
  };
  using Connection = ConnectionThread;

  BulkTransferServer(net::Listener listener, const Options& options);
  void AcceptLoop();
  void ServeConnection(Connection* connection);
  // Joins connection threads that have ended.
  void ReapFinishedLocked() WEFT_REQUIRES(mu_);
  bool Claim(uint64_t ticket, Tensor* tensor);
  // Reads a hello (its magic already read) and answers it; false when the token is wrong.
  bool Authenticate(const net::Socket& socket);

  const net::Listener listener_;
  const int max_connections_;
  const std::string token_;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;

  mutable Mutex mu_;
  std::map<uint64_t, Offered> offered_ WEFT_GUARDED_BY(mu_);
  std::random_device random_ WEFT_GUARDED_BY(mu_);
  ConnectionThreads connections_ WEFT_GUARDED_BY(mu_);
  bool shut_down_ WEFT_GUARDED_BY(mu_) = false;
};

class BulkTransferClient {
 public:
  struct Options {
    int num_threads = 4;
    // Longest wait for connecting, or for any one read or write (a header, a whole tensor), before
    // the fetch fails.
    int io_timeout_ms = 60000;
    int max_idle_connections_per_peer = 8;
    std::string token;  // sent in each new connection's hello when not empty
  };

  BulkTransferClient() : BulkTransferClient(Options()) {}
  explicit BulkTransferClient(const Options& options);
  ~BulkTransferClient();  // runs pending fetches, then closes the pooled connections
  BulkTransferClient(const BulkTransferClient&) = delete;
  BulkTransferClient& operator=(const BulkTransferClient&) = delete;

  // Fetches `ticket` from the server at host:port into `destination`, which must hold `num_bytes`
  // and stay valid until `done` runs (once, on the client's own threads). Errors name host:port
  // and the ticket.
  void FetchAsync(const std::string& host, int port, uint64_t ticket, void* destination,
                  size_t num_bytes, StatusCallback done);

 private:
  Status Fetch(const std::string& host, int port, uint64_t ticket, void* destination,
               size_t num_bytes);
  // One attempt on `fd`; `transport_failed` says whether the connection is unusable afterwards.
  Status FetchOn(const net::Socket& socket, uint64_t ticket, void* destination, size_t num_bytes,
                 bool* transport_failed);
  Status SendHello(const net::Socket& socket);
  // A pooled connection to `peer`, or an invalid socket when none is idle.
  net::Socket TakeIdle(const std::string& peer);
  void ReturnIdle(const std::string& peer, net::Socket socket);
  std::chrono::milliseconds IoTimeout() const {
    return std::chrono::milliseconds(options_.io_timeout_ms);
  }

  const Options options_;
  Mutex mu_;
  std::map<std::string, std::vector<net::Socket>> idle_ WEFT_GUARDED_BY(mu_);
  std::unique_ptr<ThreadPool> pool_;  // last: its destructor runs pending fetches
};

}  // namespace weft
