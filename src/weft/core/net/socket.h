// The one socket layer under Weft's own TCP protocols (the collective TCP transport, the bulk data
// path, the launch-time address exchange): connecting with a deadline, listening and accepting with
// a deadline, whole reads and writes with deadlines, length-announced bodies with a maximum size,
// and the token hello. Every error is a Status naming the peer's address and what was being done
// or awaited. A Socket or Listener is used by one thread at a time, except Shutdown(), which wakes
// another thread blocked on it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "weft/core/status.h"
#include "weft/core/statusor.h"

namespace weft::net {

using Clock = std::chrono::steady_clock;

// A deadline `timeout` from now.
inline Clock::time_point DeadlineIn(std::chrono::milliseconds timeout) {
  return Clock::now() + timeout;
}

struct HostPort {
  std::string host;  // without the brackets of "[::1]:80"
  int port = 0;
};
// "host:port"; InvalidArgument naming the address otherwise.
StatusOr<HostPort> SplitHostPort(const std::string& address);

// A connected socket: owns its descriptor (closed on destruction) and knows its peer's address.
class Socket {
 public:
  Socket() = default;
  Socket(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  ~Socket() { Close(); }
  Socket(Socket&& other) noexcept : fd_(other.Release()), peer_(std::move(other.peer_)) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  // Gives up ownership of the descriptor.
  int Release();
  void Close();
  // Ends both directions; wakes a thread blocked reading or writing this socket.
  void Shutdown() const;
  // TCP_NODELAY and 4 MiB buffers: Weft's protocols send small headers, then large bodies.
  void Tune() const;

  // Exactly `size` bytes before `deadline`. `what` names what is read ("the handshake reply").
  // Unavailable when the peer closes or the socket fails, DeadlineExceeded at the deadline,
  // Cancelled once `*stopping` is set (looked at every 100 ms); each names the peer and `what`.
  Status ReadFull(void* data, size_t size, Clock::time_point deadline, std::string_view what,
                  const std::atomic<bool>* stopping = nullptr) const;
  Status WriteFull(const void* data, size_t size, Clock::time_point deadline,
                   std::string_view what) const;
  // A body whose length the peer announced: DataLoss, before reading any of it, when the length
  // is over `max_bytes` (a garbage or hostile header must not make us allocate gigabytes).
  StatusOr<std::string> ReadSized(uint64_t size, uint64_t max_bytes, Clock::time_point deadline,
                                  std::string_view what,
                                  const std::atomic<bool>* stopping = nullptr) const;

 private:
  int fd_ = -1;
  std::string peer_;  // "host:port"
};

// Connects to host:port. A refused or unreachable connection is tried again (backing off from 5 to
// 100 ms) until `deadline` when `retry_refused`, so a peer still setting up its listener is
// reached; otherwise one attempt on each of the host's addresses. Unavailable naming the address
// and the last error; DeadlineExceeded when the deadline passed while retrying.
StatusOr<Socket> ConnectWithDeadline(const std::string& host, int port, Clock::time_point deadline,
                                     bool retry_refused = true);

// A listening socket (closed on destruction). Accept() may be called by one thread while another
// calls Shutdown().
class Listener {
 public:
  // Listens on host:port (0: an ephemeral port). Errors name host:port.
  static StatusOr<Listener> Listen(const std::string& host, int port, int backlog = 128);
  Listener() = default;
  ~Listener();
  Listener(Listener&& other) noexcept;
  Listener& operator=(Listener&& other) noexcept;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const { return port_; }
  // The listening descriptor, still owned by this object (for tests that play a stranger).
  int fd() const { return fd_; }
  // "host:port" ("[host]:port" for IPv6) as peers dial it.
  const std::string& address() const { return address_; }
  // The next connection before `deadline`, or DeadlineExceeded naming this listener. A poll wakes
  // at least every 100 ms to look at `*stopping` (Cancelled once set). Accepted sockets are tuned.
  StatusOr<Socket> Accept(Clock::time_point deadline,
                          const std::atomic<bool>* stopping = nullptr) const;
  // Wakes a thread blocked in Accept() (it then fails).
  void Shutdown() const;

 private:
  int fd_ = -1;
  int port_ = 0;
  std::string address_;
};

// The token hello that opens a connection on the protocols that check a shared secret:
// {uint64 magic, uint32 token_bytes, uint32 reserved} followed by the token, little-endian.
inline constexpr uint32_t kMaxHelloTokenBytes = 4096;
Status WriteTokenHello(const Socket& socket, uint64_t magic, std::string_view token,
                       Clock::time_point deadline);
// The rest of a hello whose magic the caller has read (a protocol tells a hello from its other
// messages by the magic): the token, refused unread when longer than kMaxHelloTokenBytes.
StatusOr<std::string> ReadTokenHelloAfterMagic(const Socket& socket, Clock::time_point deadline);
// Unauthenticated naming the peer unless `presented` is `expected` (compared in constant time, as
// the token is a secret); an empty `expected` accepts any token.
Status CheckHelloToken(const Socket& socket, std::string_view expected, std::string_view presented);

// strerror(error) (thread-safe).
std::string ErrnoText(int error);

}  // namespace weft::net
