#include "weft/distributed/cluster/address_exchange.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "weft/core/str_util.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kRequestMagic = 0x5745465443524551ULL;  // "WEFTCREQ"
constexpr uint64_t kReplyMagic = 0x574546544352504cULL;    // "WEFTCRPL"
constexpr uint32_t kMaxAddressBytes = 1024;
constexpr uint32_t kMaxPayloadBytes = 16 << 20;
constexpr int kPollIntervalMs = 100;
// A connected peer must send its whole request within this.
constexpr int64_t kRequestTimeoutMs = 10000;
// How much longer than its own timeout a worker waits for the coordinator's reply.
constexpr int64_t kReplyGraceMs = 2000;

struct RequestHeader {
  uint64_t magic;
  uint32_t rank;
  uint32_t world_size;
  uint32_t address_bytes;
  uint32_t reserved;
};
struct ReplyHeader {
  uint64_t magic;
  uint32_t code;
  uint32_t payload_bytes;
};
static_assert(sizeof(RequestHeader) == 24 && sizeof(ReplyHeader) == 16);

int RemainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left.count(), kPollIntervalMs)));
}

// Reads exactly `size` bytes before `deadline` (polling, so `stopping` is seen within 100 ms).
Status RecvUntil(int fd, void* data, size_t size, Clock::time_point deadline,
                 const std::atomic<bool>* stopping) {
  char* next = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    if (stopping != nullptr && *stopping) return Cancelled("stopping");
    if (Clock::now() >= deadline) return DeadlineExceeded("timed out after ", done, " bytes");
    pollfd waiting{fd, POLLIN, 0};
    const int ready = ::poll(&waiting, 1, RemainingMs(deadline));
    if (ready < 0 && errno != EINTR) return Unavailable("poll: ", std::strerror(errno));
    if (ready <= 0) continue;
    const ssize_t got = ::recv(fd, next + done, size - done, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Unavailable("recv: ", std::strerror(errno));
    if (got == 0) return Unavailable("connection closed after ", done, " of ", size, " bytes");
    done += static_cast<size_t>(got);
  }
  return Status::OK();
}

bool SendAll(int fd, const void* data, size_t size) {
  const char* next = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t sent = ::send(fd, next, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0) return false;
    next += sent;
    size -= static_cast<size_t>(sent);
  }
  return true;
}

void SendReply(int fd, Code code, const std::string& payload) {
  ReplyHeader reply{kReplyMagic, static_cast<uint32_t>(code),
                    static_cast<uint32_t>(payload.size())};
  if (SendAll(fd, &reply, sizeof(reply))) SendAll(fd, payload.data(), payload.size());
}

StatusOr<std::pair<std::string, int>> SplitAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return InvalidArgument("coordinator address '", address, "' is not HOST:PORT");
  }
  const std::string port_text = address.substr(colon + 1);
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 0 || port > 65535) {
    return InvalidArgument("coordinator address '", address, "' has a bad port");
  }
  return std::make_pair(address.substr(0, colon), static_cast<int>(port));
}

// One connection attempt; Unavailable when nobody listens yet.
StatusOr<int> Connect(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0 || found == nullptr)
    return Unavailable("cannot resolve ", host, ": ", gai_strerror(rc));
  Status last = Unavailable("no address for ", host);
  for (addrinfo* candidate = found; candidate != nullptr; candidate = candidate->ai_next) {
    const int fd = ::socket(candidate->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (::connect(fd, candidate->ai_addr, candidate->ai_addrlen) == 0) {
      freeaddrinfo(found);
      return fd;
    }
    last = Unavailable("connect: ", std::strerror(errno));
    ::close(fd);
  }
  freeaddrinfo(found);
  return last;
}

// One exchange on a connected socket.
StatusOr<std::vector<std::string>> Exchange(int fd, const AddressExchangeOptions& options,
                                            Clock::time_point deadline) {
  RequestHeader request{kRequestMagic, static_cast<uint32_t>(options.rank),
                        static_cast<uint32_t>(options.world_size),
                        static_cast<uint32_t>(options.address.size()), 0};
  if (!SendAll(fd, &request, sizeof(request)) ||
      !SendAll(fd, options.address.data(), options.address.size())) {
    return Unavailable("send: ", std::strerror(errno));
  }
  ReplyHeader reply{};
  WEFT_RETURN_IF_ERROR(RecvUntil(fd, &reply, sizeof(reply), deadline, nullptr));
  if (reply.magic != kReplyMagic) return DataLoss("the reply is not the coordinator protocol");
  if (reply.code > static_cast<uint32_t>(Code::kUnauthenticated) ||
      reply.payload_bytes > kMaxPayloadBytes) {
    return DataLoss("malformed reply (code ", reply.code, ", ", reply.payload_bytes, " bytes)");
  }
  std::string payload(reply.payload_bytes, '\0');
  WEFT_RETURN_IF_ERROR(RecvUntil(fd, payload.data(), payload.size(), deadline, nullptr));
  if (reply.code != 0) return Status(static_cast<Code>(reply.code), payload);
  std::vector<std::string> addresses;
  size_t start = 0;
  while (start <= payload.size()) {
    size_t end = payload.find('\n', start);
    if (end == std::string::npos) end = payload.size();
    addresses.push_back(payload.substr(start, end - start));
    start = end + 1;
  }
  if (static_cast<int>(addresses.size()) != options.world_size) {
    return DataLoss("the reply lists ", addresses.size(), " addresses for ", options.world_size,
                    " ranks");
  }
  return addresses;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// AddressExchangeServer

StatusOr<std::unique_ptr<AddressExchangeServer>> AddressExchangeServer::Create(
    const Options& options) {
  const std::string where = StrCat(options.host, ":", options.port);
  if (options.world_size < 1) {
    return InvalidArgument("coordinator at ", where, ": world size ", options.world_size);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc =
      getaddrinfo(options.host.c_str(), std::to_string(options.port).c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return InvalidArgument("coordinator cannot resolve ", where, ": ", gai_strerror(rc));
  }
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(found);
    return Unavailable("coordinator at ", where, ": socket: ", std::strerror(errno));
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 1024) != 0) {
    const int error = errno;
    freeaddrinfo(found);
    ::close(fd);
    return Unavailable("coordinator cannot listen at ", where, ": ", std::strerror(error));
  }
  freeaddrinfo(found);
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  const int port = bound.ss_family == AF_INET6
                       ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                       : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return std::unique_ptr<AddressExchangeServer>(new AddressExchangeServer(fd, port, options));
}

AddressExchangeServer::AddressExchangeServer(int listen_fd, int port, const Options& options)
    : listen_fd_(listen_fd),
      port_(port),
      options_(options),
      deadline_(Clock::now() + std::chrono::milliseconds(options.timeout_ms)) {
  {
    MutexLock lock(mu_);
    addresses_.resize(options.world_size);
  }
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

AddressExchangeServer::~AddressExchangeServer() { Shutdown(); }

void AddressExchangeServer::Shutdown() {
  {
    MutexLock lock(mu_);
    if (shut_down_) return;
    shut_down_ = true;
    stopping_ = true;
    changed_.NotifyAll();
  }
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (accept_thread_.joinable()) accept_thread_.join();
  ::close(listen_fd_);
  ConnectionThreads connections;
  {
    MutexLock lock(mu_);
    connections.swap(connections_);
  }
  JoinAndCloseConnections(&connections);
}

void AddressExchangeServer::ReapFinishedLocked() { ReapFinishedConnections(&connections_); }

void AddressExchangeServer::AcceptLoop() {
  while (!stopping_) {
    pollfd waiting{listen_fd_, POLLIN, 0};
    if (::poll(&waiting, 1, kPollIntervalMs) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    MutexLock lock(mu_);
    ReapFinishedLocked();
    // Each rank holds one connection; a few more allow for retries and strays.
    if (stopping_ || static_cast<int>(connections_.size()) >= 2 * options_.world_size + 16) {
      ::close(fd);
      continue;
    }
    auto connection = std::make_unique<Connection>();
    connection->fd = fd;
    Connection* raw = connection.get();
    connection->thread = std::thread([this, raw] { Serve(raw); });
    connections_.push_back(std::move(connection));
  }
}

void AddressExchangeServer::Serve(Connection* connection) {
  const int fd = connection->fd;
  const Clock::time_point read_deadline =
      Clock::now() + std::chrono::milliseconds(kRequestTimeoutMs);
  RequestHeader request{};
  Status read = RecvUntil(fd, &request, sizeof(request), read_deadline, &stopping_);
  StatusOr<std::string> reply = Unavailable("no request");
  if (!read.ok()) {
    reply = read;
  } else {
    if (request.magic != kRequestMagic) {
      reply = InvalidArgument("not a coordinator request (bad magic number)");
    } else if (request.world_size != static_cast<uint32_t>(options_.world_size)) {
      reply = InvalidArgument("rank ", request.rank, " says the world has ", request.world_size,
                              " workers; the coordinator expects ", options_.world_size);
    } else if (request.rank >= request.world_size) {
      reply = InvalidArgument("rank ", request.rank, " is not below the world size ",
                              request.world_size);
    } else if (request.address_bytes == 0 || request.address_bytes > kMaxAddressBytes) {
      reply = InvalidArgument("rank ", request.rank, " sends an address of ", request.address_bytes,
                              " bytes");
    } else {
      std::string address(request.address_bytes, '\0');
      read = RecvUntil(fd, address.data(), address.size(), read_deadline, &stopping_);
      reply = read.ok() ? Register(static_cast<int>(request.rank), address) : read;
    }
  }
  // A peer that sent too little or went away gets nothing; any request that arrived is answered.
  if (read.ok() || IsInvalidArgument(reply.status())) {
    if (reply.ok()) {
      SendReply(fd, Code::kOk, *reply);
    } else {
      SendReply(fd, reply.status().code(), reply.status().message());
    }
  }
  connection->finished = true;
  ::shutdown(fd, SHUT_RDWR);
}

StatusOr<std::string> AddressExchangeServer::Register(int rank, const std::string& address) {
  if (address.find('\n') != std::string::npos) {
    return InvalidArgument("rank ", rank, " sends an address with a line break");
  }
  MutexLock lock(mu_);
  std::string& slot = addresses_[rank];
  if (!slot.empty() && slot != address) {
    return AlreadyExists("rank ", rank, " registered twice: at ", slot, " and at ", address);
  }
  if (slot.empty()) {
    slot = address;
    ++registered_;
    changed_.NotifyAll();
  }
  while (registered_ < options_.world_size && !stopping_) {
    if (!changed_.WaitUntil(lock, deadline_) && Clock::now() >= deadline_) break;
  }
  if (registered_ == options_.world_size) return StrJoin(addresses_, "\n");
  if (stopping_) return Unavailable("the coordinator stopped before all ranks registered");
  std::vector<int> missing;
  for (int r = 0; r < options_.world_size; ++r) {
    if (addresses_[r].empty()) missing.push_back(r);
  }
  return DeadlineExceeded("rank(s) ", StrJoin(missing, ", "), " of ", options_.world_size,
                          " did not register within ", options_.timeout_ms, " ms");
}

// ---------------------------------------------------------------------------------------------
// Workers

StatusOr<std::vector<std::string>> ExchangeAddresses(const AddressExchangeOptions& options) {
  const std::string what =
      StrCat("rank ", options.rank, " registering with the coordinator at ", options.coordinator);
  StatusOr<std::pair<std::string, int>> target = SplitAddress(options.coordinator);
  if (!target.ok()) return target.status().WithContext(what);
  const Clock::time_point connect_deadline =
      Clock::now() + std::chrono::milliseconds(options.timeout_ms);
  // The coordinator may not listen yet: retry, backing off from 20 ms to 500 ms, until the
  // deadline (so the loop is bounded in time).
  std::chrono::milliseconds backoff(20);
  while (true) {
    StatusOr<int> fd = Connect(target->first, target->second);
    if (fd.ok()) {
      StatusOr<std::vector<std::string>> addresses =
          Exchange(*fd, options, connect_deadline + std::chrono::milliseconds(kReplyGraceMs));
      ::close(*fd);
      if (!addresses.ok()) return addresses.status().WithContext(what);
      return addresses;
    }
    if (Clock::now() + backoff >= connect_deadline) {
      return DeadlineExceeded(what, ": nobody answered within ", options.timeout_ms,
                              " ms (last error: ", fd.status().message(), ")");
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
}

StatusOr<ClusterSpec> RendezvousCluster(const ResolvedCluster& resolved,
                                        const std::string& own_address, int64_t timeout_ms,
                                        std::unique_ptr<AddressExchangeServer>* hosted) {
  WEFT_ASSIGN_OR_RETURN(auto target, SplitAddress(resolved.coordinator));
  if (resolved.rank == 0) {
    AddressExchangeServer::Options options;
    const bool loopback = target.first == "127.0.0.1" || target.first == "localhost";
    options.host = loopback ? "127.0.0.1" : "0.0.0.0";
    options.port = target.second;
    options.world_size = resolved.world_size;
    options.timeout_ms = timeout_ms;
    WEFT_ASSIGN_OR_RETURN(*hosted, AddressExchangeServer::Create(options));
  }
  AddressExchangeOptions registration;
  registration.coordinator = resolved.coordinator;
  registration.rank = resolved.rank;
  registration.world_size = resolved.world_size;
  registration.address = own_address;
  registration.timeout_ms = timeout_ms;
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> addresses, ExchangeAddresses(registration));
  return ClusterSpec::FromJobs({{"worker", std::move(addresses)}});
}

}  // namespace weft
