#include "weft/distributed/rpc/bulk_transfer.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "weft/core/mutex.h"
#include "weft/distributed/rpc/transport_security.h"

namespace weft {
namespace {

constexpr int kSocketBufferBytes = 4 << 20;
// How often blocked server threads look at the stopping flag.
constexpr int kPollIntervalMs = 100;

struct RequestHeader {
  uint64_t magic;
  uint64_t ticket;
};
struct ReplyHeader {
  uint64_t magic;
  uint32_t code;
  uint32_t reserved;
  uint64_t num_bytes;
};
struct HelloHeader {
  uint64_t magic;
  uint32_t token_bytes;
  uint32_t reserved;
};
static_assert(sizeof(RequestHeader) == 16 && sizeof(ReplyHeader) == 24 &&
              sizeof(HelloHeader) == 16);

std::string ErrnoText(int error) { return std::strerror(error); }

void TuneSocket(int fd) {
  int size = kSocketBufferBytes;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Writes all of `data`; false on any error (errno set). EINTR and partial writes continue.
bool SendAll(int fd, const void* data, size_t size) {
  const char* next = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t sent = ::send(fd, next, size, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    next += sent;
    size -= static_cast<size_t>(sent);
  }
  return true;
}

// Reads exactly `size` bytes. Returns the bytes read before end of stream or an error (errno set;
// 0 at end of stream).
size_t RecvAll(int fd, void* data, size_t size) {
  char* next = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t got = ::recv(fd, next + done, size - done, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return done;
    }
    if (got == 0) {
      errno = 0;
      return done;
    }
    done += static_cast<size_t>(got);
  }
  return done;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// BulkTransferServer

StatusOr<std::unique_ptr<BulkTransferServer>> BulkTransferServer::Create(const Options& options) {
  const std::string where = StrCat(options.host, ":", options.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(options.port);
  int rc = getaddrinfo(options.host.c_str(), port_text.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return InvalidArgument("bulk transfer server cannot resolve ", where, ": ", gai_strerror(rc));
  }
  int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(found);
    return Unavailable("bulk transfer server at ", where, ": socket: ", ErrnoText(errno));
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
    const int error = errno;
    freeaddrinfo(found);
    ::close(fd);
    return Unavailable("bulk transfer server cannot listen at ", where, ": ", ErrnoText(error));
  }
  freeaddrinfo(found);
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  int port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return std::unique_ptr<BulkTransferServer>(new BulkTransferServer(fd, port, options));
}

BulkTransferServer::BulkTransferServer(int listen_fd, int port, const Options& options)
    : listen_fd_(listen_fd),
      port_(port),
      max_connections_(options.max_connections),
      token_(options.token) {
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

BulkTransferServer::~BulkTransferServer() { Shutdown(); }

uint64_t BulkTransferServer::Offer(int64_t step_id, const Tensor& tensor) {
  MutexLock lock(mu_);
  uint64_t ticket = 0;
  // Zero is never a ticket, so a zeroed request cannot match by accident.
  while (ticket == 0 || offered_.count(ticket) > 0) {
    ticket = (static_cast<uint64_t>(random_()) << 32) | random_();
  }
  offered_.emplace(ticket, Offered{step_id, tensor});
  return ticket;
}

void BulkTransferServer::ReleaseStep(int64_t step_id) {
  std::vector<Tensor> dropped;  // freed outside the lock
  MutexLock lock(mu_);
  for (auto it = offered_.begin(); it != offered_.end();) {
    if (it->second.step_id == step_id) {
      dropped.push_back(std::move(it->second.tensor));
      it = offered_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t BulkTransferServer::NumOffered() const {
  MutexLock lock(mu_);
  return offered_.size();
}

bool BulkTransferServer::Claim(uint64_t ticket, Tensor* tensor) {
  MutexLock lock(mu_);
  auto it = offered_.find(ticket);
  if (it == offered_.end()) return false;
  *tensor = std::move(it->second.tensor);
  offered_.erase(it);
  return true;
}

void BulkTransferServer::Shutdown() {
  {
    MutexLock lock(mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  stopping_ = true;
  // Wakes the accept loop's poll at once (Linux) instead of at its next interval.
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (accept_thread_.joinable()) accept_thread_.join();
  ::close(listen_fd_);
  ConnectionThreads connections;
  {
    MutexLock lock(mu_);
    connections.swap(connections_);
    offered_.clear();
  }
  for (auto& connection : connections) {
    // Wakes a thread blocked in send() or recv().
    ::shutdown(connection->fd, SHUT_RDWR);
  }
  JoinAndCloseConnections(&connections);
}

void BulkTransferServer::ReapFinishedLocked() { ReapFinishedConnections(&connections_); }

void BulkTransferServer::AcceptLoop() {
  while (!stopping_) {
    pollfd waiting{listen_fd_, POLLIN, 0};
    int ready = ::poll(&waiting, 1, kPollIntervalMs);
    if (ready <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    MutexLock lock(mu_);
    ReapFinishedLocked();
    if (stopping_ || static_cast<int>(connections_.size()) >= max_connections_) {
      ::close(fd);  // refused: too many connections
      continue;
    }
    TuneSocket(fd);
    auto connection = std::make_unique<Connection>();
    connection->fd = fd;
    Connection* raw = connection.get();
    connection->thread = std::thread([this, raw] { ServeConnection(raw); });
    connections_.push_back(std::move(connection));
  }
}

bool BulkTransferServer::Authenticate(int fd) {
  uint32_t sizes[2];
  ReplyHeader reply{kBulkReplyMagic, 0, 0, 0};
  bool ok = RecvAll(fd, sizes, sizeof(sizes)) == sizeof(sizes) && sizes[0] <= kMaxBulkTokenBytes;
  std::string token(ok ? sizes[0] : 0, '\0');
  ok = ok && RecvAll(fd, token.data(), token.size()) == token.size();
  // A server without a token accepts any hello.
  ok = ok && (token_.empty() || TokenMatches(token_, token));
  if (!ok) reply.code = static_cast<uint32_t>(Code::kUnauthenticated);
  return SendAll(fd, &reply, sizeof(reply)) && ok;
}

void BulkTransferServer::ServeConnection(Connection* connection) {
  const int fd = connection->fd;
  bool authenticated = token_.empty();
  while (!stopping_) {
    pollfd waiting{fd, POLLIN, 0};
    int ready = ::poll(&waiting, 1, kPollIntervalMs);
    if (ready == 0) continue;
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    RequestHeader request;
    // The magic first: a hello's header is the same size, but what follows it differs.
    if (RecvAll(fd, &request.magic, sizeof(request.magic)) != sizeof(request.magic)) break;
    if (request.magic == kBulkHelloMagic) {
      if (!Authenticate(fd)) break;
      authenticated = true;
      continue;
    }
    if (request.magic != kBulkRequestMagic) break;  // not our protocol: hang up
    if (RecvAll(fd, &request.ticket, sizeof(request.ticket)) != sizeof(request.ticket)) break;
    Tensor tensor;
    ReplyHeader reply{kBulkReplyMagic, 0, 0, 0};
    if (!authenticated) {
      reply.code = static_cast<uint32_t>(Code::kUnauthenticated);
      SendAll(fd, &reply, sizeof(reply));
      break;
    }
    if (!Claim(request.ticket, &tensor)) {
      reply.code = static_cast<uint32_t>(Code::kNotFound);
      if (!SendAll(fd, &reply, sizeof(reply))) break;
      continue;
    }
    reply.num_bytes = tensor.TotalBytes();
    if (!SendAll(fd, &reply, sizeof(reply))) break;
    if (reply.num_bytes > 0 && !SendAll(fd, tensor.raw_data(), reply.num_bytes)) break;
  }
  // Counted as ended before the peer hears of it, so that a peer that saw the hang-up finds the
  // slot free. The peer is told at once; the descriptor is closed after the join, so that
  // Shutdown() never touches a number the system has already handed out again.
  connection->finished = true;
  ::shutdown(fd, SHUT_RDWR);
}

// ---------------------------------------------------------------------------------------------
// BulkTransferClient

BulkTransferClient::BulkTransferClient(const Options& options)
    : options_(options),
      pool_(std::make_unique<ThreadPool>("bulk_transfer_client", options.num_threads)) {}

BulkTransferClient::~BulkTransferClient() {
  pool_.reset();
  for (auto& [peer, fds] : idle_) {
    for (int fd : fds) ::close(fd);
  }
}

void BulkTransferClient::FetchAsync(const std::string& host, int port, uint64_t ticket,
                                    void* destination, size_t num_bytes, StatusCallback done) {
  pool_->Schedule([this, host, port, ticket, destination, num_bytes, done = std::move(done)] {
    done(Fetch(host, port, ticket, destination, num_bytes));
  });
}

Status BulkTransferClient::Fetch(const std::string& host, int port, uint64_t ticket,
                                 void* destination, size_t num_bytes) {
  const std::string peer = StrCat(host, ":", port);
  // A pooled connection may have died with a restarted server: then try once on a new one.
  int fd = TakeIdle(peer);
  if (fd >= 0) {
    bool transport_failed = false;
    Status status = FetchOn(fd, peer, ticket, destination, num_bytes, &transport_failed);
    if (!transport_failed) {
      ReturnIdle(peer, fd);
      return status;
    }
    ::close(fd);
  }
  WEFT_ASSIGN_OR_RETURN(fd, Connect(host, port));
  if (!options_.token.empty()) {
    Status hello = SendHello(fd, peer);
    if (!hello.ok()) {
      ::close(fd);
      return hello;
    }
  }
  bool transport_failed = false;
  Status status = FetchOn(fd, peer, ticket, destination, num_bytes, &transport_failed);
  if (transport_failed) {
    ::close(fd);
  } else {
    ReturnIdle(peer, fd);
  }
  return status;
}

Status BulkTransferClient::FetchOn(int fd, const std::string& peer, uint64_t ticket,
                                   void* destination, size_t num_bytes, bool* transport_failed) {
  *transport_failed = true;
  const std::string what = StrCat("bulk fetch of ticket ", ticket, " from ", peer);
  RequestHeader request{kBulkRequestMagic, ticket};
  if (!SendAll(fd, &request, sizeof(request))) {
    return Unavailable(what, ": send: ", ErrnoText(errno));
  }
  ReplyHeader reply;
  size_t got = RecvAll(fd, &reply, sizeof(reply));
  if (got != sizeof(reply)) {
    return Unavailable(what, ": connection lost reading the reply (", got, " of ", sizeof(reply),
                       " bytes", errno != 0 ? StrCat(", ", ErrnoText(errno)) : "", ")");
  }
  if (reply.magic != kBulkReplyMagic) return Internal(what, ": reply has a bad magic number");
  if (reply.code == static_cast<uint32_t>(Code::kUnauthenticated)) {
    return Unauthenticated(what, ": the server wants a token (--token-file or WEFT_TOKEN)");
  }
  if (reply.code != 0) {
    *transport_failed = false;
    return Internal(what, ": the server does not know the ticket (code ", reply.code, ")");
  }
  if (reply.num_bytes != num_bytes) {
    return Internal(what, ": the server sends ", reply.num_bytes, " bytes, expected ", num_bytes);
  }
  got = RecvAll(fd, destination, num_bytes);
  if (got != num_bytes) {
    return Unavailable(what, ": short read, ", got, " of ", num_bytes, " bytes",
                       errno != 0 ? StrCat(" (", ErrnoText(errno), ")") : "");
  }
  *transport_failed = false;
  return Status::OK();
}

Status BulkTransferClient::SendHello(int fd, const std::string& peer) {
  HelloHeader hello{kBulkHelloMagic, static_cast<uint32_t>(options_.token.size()), 0};
  if (!SendAll(fd, &hello, sizeof(hello)) ||
      !SendAll(fd, options_.token.data(), options_.token.size())) {
    return Unavailable("bulk transfer hello to ", peer, ": send: ", ErrnoText(errno));
  }
  ReplyHeader reply;
  if (RecvAll(fd, &reply, sizeof(reply)) != sizeof(reply) || reply.magic != kBulkReplyMagic) {
    return Unavailable("bulk transfer hello to ", peer, ": no reply");
  }
  if (reply.code != 0) {
    return Unauthenticated("bulk transfer to ", peer, ": the server refused the token");
  }
  return Status::OK();
}

StatusOr<int> BulkTransferClient::Connect(const std::string& host, int port) {
  const std::string peer = StrCat(host, ":", port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Unavailable("bulk transfer cannot resolve ", peer, ": ", gai_strerror(rc));
  }
  int error = 0;
  for (addrinfo* address = found; address != nullptr; address = address->ai_next) {
    int fd = ::socket(address->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = errno;
      continue;
    }
    TuneSocket(fd);
    timeval timeout{options_.io_timeout_ms / 1000, (options_.io_timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    if (::connect(fd, address->ai_addr, address->ai_addrlen) == 0) {
      freeaddrinfo(found);
      return fd;
    }
    error = errno;
    ::close(fd);
  }
  freeaddrinfo(found);
  return Unavailable("bulk transfer cannot connect to ", peer, ": ", ErrnoText(error));
}

int BulkTransferClient::TakeIdle(const std::string& peer) {
  MutexLock lock(mu_);
  auto it = idle_.find(peer);
  if (it == idle_.end() || it->second.empty()) return -1;
  int fd = it->second.back();
  it->second.pop_back();
  return fd;
}

void BulkTransferClient::ReturnIdle(const std::string& peer, int fd) {
  {
    MutexLock lock(mu_);
    std::vector<int>& fds = idle_[peer];
    if (static_cast<int>(fds.size()) < options_.max_idle_connections_per_peer) {
      fds.push_back(fd);
      return;
    }
  }
  ::close(fd);
}

}  // namespace weft
