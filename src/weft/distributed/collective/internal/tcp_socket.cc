#include "weft/distributed/collective/internal/tcp_socket.h"

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace weft::internal {
namespace {

constexpr uint64_t kHandshakeMagic = 0x5745465454435031ULL;  // "WEFTTCP1"
constexpr uint64_t kReplyMagic = 0x5745465454435032ULL;      // "WEFTTCP2"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxTokenBytes = 4096;
// An accepted connection gets this long to say who it is, so that a silent stranger cannot hold
// up the peers queued behind it.
constexpr int kHandshakeMs = 2000;
constexpr int kSocketBufferBytes = 4 << 20;

struct Handshake {
  uint64_t magic;
  uint32_t version;
  int32_t from_rank;
  int32_t to_rank;
  int32_t world_size;
  uint32_t token_bytes;
  uint32_t reserved;
};
struct HandshakeReply {
  uint64_t magic;
  int32_t rank;
  int32_t accepted;
};
static_assert(sizeof(Handshake) == 32 && sizeof(HandshakeReply) == 16);

// Blocking-style I/O on a non-blocking socket, bounded by `timeout_ms` overall. Returns false with
// `*why` set on error, end of stream or timeout.
bool IoAll(int fd, char* data, size_t size, bool sending, int timeout_ms, std::string* why) {
  const Deadline deadline{std::chrono::milliseconds(timeout_ms)};
  size_t done = 0;
  while (done < size) {
    ssize_t n = sending ? ::send(fd, data + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT)
                        : ::recv(fd, data + done, size - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0 && !sending) {
      *why = "the connection was closed";
      return false;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      *why = ErrnoText(errno);
      return false;
    }
    pollfd waiting{fd, static_cast<short>(sending ? POLLOUT : POLLIN), 0};
    const int wait_ms = deadline.PollMs(1000);
    if (wait_ms == 0 || (::poll(&waiting, 1, wait_ms) == 0 && deadline.Expired())) {
      *why = StrCat("no reply within ", timeout_ms, " ms");
      return false;
    }
  }
  return true;
}

std::string PeerAddress(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "unknown";
  char host[NI_MAXHOST] = {};
  char port[NI_MAXSERV] = {};
  getnameinfo(reinterpret_cast<sockaddr*>(&address), length, host, sizeof(host), port, sizeof(port),
              NI_NUMERICHOST | NI_NUMERICSERV);
  return StrCat(host, ":", port);
}

Status SplitAddress(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return InvalidArgument("address '", address, "' is not host:port");
  }
  *host = address.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  *port = address.substr(colon + 1);
  return Status::OK();
}

// Dials `address` until it answers or the deadline passes (the peer's listener exists before the
// group does, but a refused connection is retried in case it is being set up).
StatusOr<int> Dial(const std::string& who, const std::string& address, const Deadline& deadline) {
  std::string host, port;
  WEFT_RETURN_IF_ERROR(SplitAddress(address, &host, &port).WithContext(who));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Unavailable(who, ": cannot resolve ", address, ": ", gai_strerror(rc));
  }
  std::string last_error;
  for (int attempt = 0;; ++attempt) {
    const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
      freeaddrinfo(found);
      TuneSocket(fd);
      return fd;
    }
    last_error = ErrnoText(errno);
    if (fd >= 0) ::close(fd);
    if (deadline.Expired()) break;
    pollfd none{-1, 0, 0};
    ::poll(&none, 0, std::min(deadline.PollMs(50), attempt < 10 ? 5 : 50));
  }
  freeaddrinfo(found);
  return Unavailable(who, ": cannot connect to ", address, ": ", last_error);
}

Status DialPeer(const TransportOptions& options, int peer, const std::string& address,
                const Deadline& deadline, int* out) {
  const std::string who = StrCat("TCP transport of group '", options.group_token, "': member ",
                                 MemberName(options, peer), " at ", address);
  WEFT_ASSIGN_OR_RETURN(const int fd, Dial(who, address, deadline));
  *out = fd;  // closed by the caller on failure
  std::string message(sizeof(Handshake), '\0');
  const Handshake hello{kHandshakeMagic,
                        kVersion,
                        options.rank,
                        peer,
                        options.world_size,
                        static_cast<uint32_t>(options.group_token.size()),
                        0};
  std::memcpy(message.data(), &hello, sizeof(hello));
  message += options.group_token;
  std::string why;
  if (!IoAll(fd, message.data(), message.size(), true, deadline.PollMs(INT32_MAX), &why)) {
    return Unavailable(who, ": sending the handshake: ", why);
  }
  HandshakeReply reply{};
  if (!IoAll(fd, reinterpret_cast<char*>(&reply), sizeof(reply), false, deadline.PollMs(INT32_MAX),
             &why)) {
    return Unavailable(who, ": no handshake reply (", why,
                       "); is it a member of this group (same token and size)?");
  }
  if (reply.magic != kReplyMagic || reply.rank != peer || reply.accepted != 1) {
    return DataLoss(who, ": bad handshake reply (magic ", reply.magic, ", rank ", reply.rank,
                    "): not a Weft collective transport of this group");
  }
  return Status::OK();
}

// Reads and checks one accepted connection's handshake; returns the peer's rank or an error text.
StatusOr<int> AcceptHandshake(const TransportOptions& options, int fd,
                              const std::vector<int>& fds) {
  std::string why;
  Handshake hello{};
  if (!IoAll(fd, reinterpret_cast<char*>(&hello), sizeof(hello), false, kHandshakeMs, &why)) {
    return Unavailable("no handshake: ", why);
  }
  if (hello.magic != kHandshakeMagic) {
    return DataLoss("not a Weft collective handshake (magic ", hello.magic, ")");
  }
  if (hello.version != kVersion || hello.token_bytes > kMaxTokenBytes) {
    return DataLoss("handshake version ", hello.version, " with a ", hello.token_bytes,
                    "-byte token; expected version ", kVersion);
  }
  std::string token(hello.token_bytes, '\0');
  if (!IoAll(fd, token.data(), token.size(), false, kHandshakeMs, &why)) {
    return Unavailable("handshake token: ", why);
  }
  if (token != options.group_token || hello.world_size != options.world_size ||
      hello.to_rank != options.rank) {
    return FailedPrecondition("handshake for rank ", hello.to_rank, " of group '", token,
                              "' of size ", hello.world_size, " from rank ", hello.from_rank);
  }
  if (hello.from_rank <= options.rank || hello.from_rank >= options.world_size ||
      fds[hello.from_rank] >= 0) {
    return FailedPrecondition("unexpected or repeated handshake from rank ", hello.from_rank);
  }
  const HandshakeReply reply{kReplyMagic, options.rank, 1};
  if (!IoAll(fd, const_cast<char*>(reinterpret_cast<const char*>(&reply)), sizeof(reply), true,
             kHandshakeMs, &why)) {
    return Unavailable("handshake reply: ", why);
  }
  return hello.from_rank;
}

}  // namespace

std::string ErrnoText(int error) { return std::strerror(error); }

void TuneSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  int size = kSocketBufferBytes;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

StatusOr<ListeningSocket> ListenOn(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), "0", &hints, &found);
  if (rc != 0 || found == nullptr) {
    return InvalidArgument("TCP transport listener cannot resolve '", host,
                           "': ", gai_strerror(rc));
  }
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
    const int error = errno;
    freeaddrinfo(found);
    if (fd >= 0) ::close(fd);
    return Unavailable("TCP transport listener cannot listen on ", host, ": ", ErrnoText(error));
  }
  freeaddrinfo(found);
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  const bool v6 = bound.ss_family == AF_INET6;
  const int port = v6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return ListeningSocket{fd, v6 ? StrCat("[", host, "]:", port) : StrCat(host, ":", port)};
}

StatusOr<std::vector<int>> ConnectMesh(const TransportOptions& options, int listen_fd,
                                       const std::vector<std::string>& addresses,
                                       const Deadline& deadline) {
  std::vector<int> fds(options.world_size, -1);
  auto close_all = [&fds] {
    for (int& fd : fds) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  };
  // Dial the lower ranks: they accept while this member dials, and rank 0 only accepts, so no
  // two members wait on each other.
  for (int peer = 0; peer < options.rank; ++peer) {
    Status status = DialPeer(options, peer, addresses[peer], deadline, &fds[peer]);
    if (!status.ok()) {
      close_all();
      return status;
    }
  }
  std::string rejected;
  for (;;) {
    std::string missing;
    for (int peer = options.rank + 1; peer < options.world_size; ++peer) {
      if (fds[peer] < 0) missing += StrCat(missing.empty() ? "" : ", ", MemberName(options, peer));
    }
    if (missing.empty()) return fds;
    pollfd waiting{listen_fd, POLLIN, 0};
    const int ready = deadline.Expired() ? 0 : ::poll(&waiting, 1, deadline.PollMs(1000));
    if (ready <= 0) {
      if (!deadline.Expired()) continue;
      close_all();
      return DeadlineExceeded("TCP transport of group '", options.group_token, "': member ",
                              MemberName(options, options.rank), " at ", addresses[options.rank],
                              ": members that never connected within ", options.timeout.count(),
                              " ms: ", missing,
                              rejected.empty() ? "" : "; rejected connections: ", rejected);
    }
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    TuneSocket(fd);
    StatusOr<int> peer = AcceptHandshake(options, fd, fds);
    if (!peer.ok()) {
      // Not the right peer: drop it and keep waiting; the reason shows if nobody right comes.
      rejected += StrCat(rejected.empty() ? "" : "; ", "from ", PeerAddress(fd), ": ",
                         peer.status().ToString());
      ::close(fd);
      continue;
    }
    fds[*peer] = fd;
  }
}

}  // namespace weft::internal
