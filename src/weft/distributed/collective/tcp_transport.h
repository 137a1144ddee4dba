// The TCP CollectiveTransport: for members anywhere. A full mesh of TCP connections (each member
// dials the lower ranks and accepts the higher ones, with a handshake carrying the group token and
// ranks). Small all-reduces send every input to every peer and each member sums in rank order;
// large ones run a ring reduce-scatter + all-gather pipelined in chunks, each element reduced once
// by one member, so every member gets the same bits. Every message carries the operation's
// identity, checked on receipt. Thread-safety: as CollectiveTransport; a listener is not shared.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/net/socket.h"
#include "weft/core/statusor.h"
#include "weft/distributed/collective/collective_transport.h"

namespace weft {

// A listening socket on an ephemeral port, made before the group is known so that its address can
// be exchanged while the group is resolved. Closed when destroyed unless a transport took it.
class TcpTransportListener final : public TransportListener {
 public:
  // Listens on `host` ("127.0.0.1", "::1", a host name) at a port the system picks.
  static StatusOr<std::unique_ptr<TcpTransportListener>> Listen(const std::string& host);
  TcpTransportListener(const TcpTransportListener&) = delete;
  TcpTransportListener& operator=(const TcpTransportListener&) = delete;

  // "host:port" (IPv6 hosts in brackets).
  std::string address() const override { return listener_.address(); }
  // The listening descriptor, still owned by this object.
  int fd() const { return listener_.fd(); }
  const net::Listener& listener() const { return listener_; }

 private:
  explicit TcpTransportListener(net::Listener listener) : listener_(std::move(listener)) {}
  net::Listener listener_;
};

struct TcpTransportTuning {
  // All-reduces of at most this many bytes send every input to every peer; larger ones use the
  // ring.
  size_t small_bytes = size_t{64} << 10;
  // The ring's pipelining unit (on loopback 256 KB beat 128 KB and 1-4 MB at 4 and 64 MB).
  size_t chunk_bytes = size_t{256} << 10;
};

// Connects the group's full mesh (waiting up to options.timeout: DeadlineExceeded naming the
// members that never connected, and any connection rejected meanwhile). `member_addresses` holds
// every member's listener address by rank; `listener` is this member's (closed once connected).
StatusOr<std::unique_ptr<CollectiveTransport>> CreateTcpTransport(
    const TransportOptions& options, std::unique_ptr<TcpTransportListener> listener,
    const std::vector<std::string>& member_addresses);
StatusOr<std::unique_ptr<CollectiveTransport>> CreateTcpTransport(
    const TransportOptions& options, std::unique_ptr<TcpTransportListener> listener,
    const std::vector<std::string>& member_addresses, const TcpTransportTuning& tuning);

}  // namespace weft
