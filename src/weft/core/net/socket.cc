// The socket layer (see the header).
#include "weft/core/net/socket.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "weft/core/str_util.h"

namespace weft::net {
namespace {

constexpr int kSocketBufferBytes = 4 << 20;
// How often a wait looks at its stopping flag.
constexpr int kPollSliceMs = 100;

struct HelloHeader {
  uint64_t magic;
  uint32_t token_bytes;
  uint32_t reserved;
};
static_assert(sizeof(HelloHeader) == 16);

// Milliseconds to the deadline for poll(), rounded up, at most kPollSliceMs.
int PollMs(Clock::time_point deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, kPollSliceMs));
}

// Waits for `events` on `fd` until the deadline: OK when ready, else why not (the caller adds
// the peer and what it awaited).
Status WaitFor(int fd, short events, Clock::time_point deadline,
               const std::atomic<bool>* stopping) {
  while (true) {
    if (stopping != nullptr && *stopping) return Cancelled("stopping");
    const int wait_ms = PollMs(deadline);
    if (wait_ms == 0) return DeadlineExceeded("timed out");
    pollfd waiting{fd, events, 0};
    const int ready = ::poll(&waiting, 1, wait_ms);
    if (ready > 0) return Status::OK();
    if (ready < 0 && errno != EINTR) return Unavailable("poll: ", ErrnoText(errno));
  }
}

std::string AddressText(const sockaddr* address, socklen_t length) {
  char host[NI_MAXHOST] = {};
  char port[NI_MAXSERV] = {};
  if (getnameinfo(address, length, host, sizeof(host), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "unknown";
  }
  return address->sa_family == AF_INET6 ? StrCat("[", host, "]:", port) : StrCat(host, ":", port);
}

StatusOr<addrinfo*> Resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Unavailable("cannot resolve ", host, ":", port, ": ", gai_strerror(rc));
  }
  return found;
}

}  // namespace

std::string ErrnoText(int error) {
  char buffer[256];
  // The GNU strerror_r returns the text, which may not be in `buffer`.
  return strerror_r(error, buffer, sizeof(buffer));
}

StatusOr<HostPort> SplitHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return InvalidArgument("address '", address, "' is not host:port");
  }
  HostPort out;
  out.host = address.substr(0, colon);
  if (out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  const std::string port_text = address.substr(colon + 1);
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (*end != '\0' || port < 0 || port > 65535) {
    return InvalidArgument("address '", address, "' has a bad port");
  }
  out.port = static_cast<int>(port);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Socket

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.Release();
    peer_ = std::move(other.peer_);
  }
  return *this;
}

int Socket::Release() { return std::exchange(fd_, -1); }

void Socket::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::Shutdown() const {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void Socket::Tune() const {
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  int size = kSocketBufferBytes;
  setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
  setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

Status Socket::ReadFull(void* data, size_t size, Clock::time_point deadline, std::string_view what,
                        const std::atomic<bool>* stopping) const {
  char* next = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    // Read what is there first: a poll only when the socket has nothing yet.
    const ssize_t got = ::recv(fd_, next + done, size - done, MSG_DONTWAIT);
    if (got > 0) {
      done += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) {
      return Unavailable("reading ", what, " from ", peer_, ": the connection was closed after ",
                         done, " of ", size, " bytes");
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Unavailable("reading ", what, " from ", peer_, ": ", ErrnoText(errno));
    }
    Status ready = WaitFor(fd_, POLLIN, deadline, stopping);
    if (!ready.ok()) {
      return Status(ready.code(), StrCat("reading ", what, " from ", peer_, ": ", ready.message(),
                                         " after ", done, " of ", size, " bytes"));
    }
  }
  return Status::OK();
}

Status Socket::WriteFull(const void* data, size_t size, Clock::time_point deadline,
                         std::string_view what) const {
  const char* next = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t sent = ::send(fd_, next + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      done += static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      return Unavailable("sending ", what, " to ", peer_, ": ", ErrnoText(errno));
    }
    Status ready = WaitFor(fd_, POLLOUT, deadline, nullptr);
    if (!ready.ok()) {
      return Status(ready.code(), StrCat("sending ", what, " to ", peer_, ": ", ready.message(),
                                         " after ", done, " of ", size, " bytes"));
    }
  }
  return Status::OK();
}

StatusOr<std::string> Socket::ReadSized(uint64_t size, uint64_t max_bytes,
                                        Clock::time_point deadline, std::string_view what,
                                        const std::atomic<bool>* stopping) const {
  if (size > max_bytes) {
    return DataLoss(peer_, " announces ", what, " of ", size, " bytes; at most ", max_bytes,
                    " are accepted");
  }
  std::string body(size, '\0');
  WEFT_RETURN_IF_ERROR(ReadFull(body.data(), body.size(), deadline, what, stopping));
  return body;
}

// ---------------------------------------------------------------------------------------------
// Connecting and listening

StatusOr<Socket> ConnectWithDeadline(const std::string& host, int port, Clock::time_point deadline,
                                     bool retry_refused) {
  const std::string peer = StrCat(host, ":", port);
  StatusOr<addrinfo*> found = Resolve(host, port, /*passive=*/false);
  if (!found.ok()) return found.status();
  std::string last_error = "no address";
  std::chrono::milliseconds backoff(5);
  while (true) {
    for (addrinfo* candidate = *found; candidate != nullptr; candidate = candidate->ai_next) {
      const int fd = ::socket(candidate->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        last_error = ErrnoText(errno);
        continue;
      }
      // Tuned before connecting: the window scale is agreed on in the handshake.
      Socket socket(fd, peer);
      socket.Tune();
      if (::connect(fd, candidate->ai_addr, candidate->ai_addrlen) == 0) {
        freeaddrinfo(*found);
        return socket;
      }
      last_error = ErrnoText(errno);  // the socket closes here
    }
    if (!retry_refused) break;
    if (Clock::now() + backoff >= deadline) {
      freeaddrinfo(*found);
      return DeadlineExceeded("connecting to ", peer, ": nobody accepted before the deadline (",
                              last_error, ")");
    }
    // Bounded by the deadline; the listener may be a moment from existing.
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  }
  freeaddrinfo(*found);
  return Unavailable("connecting to ", peer, ": ", last_error);
}

StatusOr<Listener> Listener::Listen(const std::string& host, int port, int backlog) {
  const std::string where = StrCat(host, ":", port);
  StatusOr<addrinfo*> found = Resolve(host, port, /*passive=*/true);
  if (!found.ok()) return InvalidArgument("listening at ", where, ": ", found.status().message());
  const int fd = ::socket((*found)->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || ::bind(fd, (*found)->ai_addr, (*found)->ai_addrlen) != 0 ||
      ::listen(fd, backlog) != 0) {
    const int error = errno;
    freeaddrinfo(*found);
    if (fd >= 0) ::close(fd);
    return Unavailable("cannot listen at ", where, ": ", ErrnoText(error));
  }
  freeaddrinfo(*found);
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  const bool v6 = bound.ss_family == AF_INET6;
  Listener listener;
  listener.fd_ = fd;
  listener.port_ = v6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listener.address_ =
      v6 ? StrCat("[", host, "]:", listener.port_) : StrCat(host, ":", listener.port_);
  return listener;
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

Listener::Listener(Listener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_), address_(std::move(other.address_)) {}

Listener& Listener::operator=(Listener&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
    address_ = std::move(other.address_);
  }
  return *this;
}

StatusOr<Socket> Listener::Accept(Clock::time_point deadline,
                                  const std::atomic<bool>* stopping) const {
  while (true) {
    Status ready = WaitFor(fd_, POLLIN, deadline, stopping);
    if (!ready.ok()) {
      return Status(ready.code(), StrCat("accepting at ", address_, ": ", ready.message()));
    }
    sockaddr_storage from{};
    socklen_t length = sizeof(from);
    const int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&from), &length, SOCK_CLOEXEC);
    if (fd < 0) {
      // Shut down, or a connection that went away before it was accepted.
      if (errno == EINVAL) return Cancelled("the listener at ", address_, " was shut down");
      continue;
    }
    Socket socket(fd, AddressText(reinterpret_cast<sockaddr*>(&from), length));
    socket.Tune();
    return socket;
  }
}

void Listener::Shutdown() const {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

// ---------------------------------------------------------------------------------------------
// The token hello

Status WriteTokenHello(const Socket& socket, uint64_t magic, std::string_view token,
                       Clock::time_point deadline) {
  const HelloHeader header{magic, static_cast<uint32_t>(token.size()), 0};
  std::string message(sizeof(header), '\0');
  std::memcpy(message.data(), &header, sizeof(header));
  message.append(token);
  return socket.WriteFull(message.data(), message.size(), deadline, "the hello");
}

StatusOr<std::string> ReadTokenHelloAfterMagic(const Socket& socket, Clock::time_point deadline) {
  uint32_t sizes[2];  // token_bytes, reserved
  WEFT_RETURN_IF_ERROR(socket.ReadFull(sizes, sizeof(sizes), deadline, "the hello"));
  return socket.ReadSized(sizes[0], kMaxHelloTokenBytes, deadline, "a hello token");
}

Status CheckHelloToken(const Socket& socket, std::string_view expected,
                       std::string_view presented) {
  if (expected.empty()) return Status::OK();
  // volatile keeps the compiler from turning the loop into an early-exit comparison.
  volatile unsigned char difference = expected.size() == presented.size() ? 0 : 1;
  for (size_t i = 0; i < std::min(expected.size(), presented.size()); ++i) {
    difference = difference | (static_cast<unsigned char>(expected[i]) ^
                               static_cast<unsigned char>(presented[i]));
  }
  if (difference == 0) return Status::OK();
  return Unauthenticated("the hello from ", socket.peer(), " carries the wrong token");
}

}  // namespace weft::net
