#include "weft/distributed/cluster/address_exchange.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "weft/core/net/socket.h"
#include "weft/core/str_util.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kRequestMagic = 0x5745465443524551ULL;  // "WEFTCREQ"
constexpr uint64_t kReplyMagic = 0x574546544352504cULL;    // "WEFTCRPL"
constexpr uint32_t kMaxAddressBytes = 1024;
constexpr uint32_t kMaxPayloadBytes = 16 << 20;
// How often the accept loop looks at the stopping flag.
constexpr std::chrono::milliseconds kAcceptSlice{100};
// A connected peer must send its whole request within this.
constexpr std::chrono::milliseconds kRequestTimeout{10000};
// How long a reply may take to leave (a peer that stopped reading is not waited on for ever).
constexpr std::chrono::milliseconds kReplySendTimeout{10000};
// How much longer than its own timeout a worker waits for the coordinator's reply.
constexpr std::chrono::milliseconds kReplyGrace{2000};

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

void SendReply(const net::Socket& socket, Code code, const std::string& payload) {
  ReplyHeader reply{kReplyMagic, static_cast<uint32_t>(code),
                    static_cast<uint32_t>(payload.size())};
  std::string message(sizeof(reply), '\0');
  std::memcpy(message.data(), &reply, sizeof(reply));
  message += payload;
  // The peer may be gone; it then gets nothing, and there is nobody else to tell.
  socket.WriteFull(message.data(), message.size(), net::DeadlineIn(kReplySendTimeout), "the reply")
      .IgnoreError();
}

StatusOr<net::HostPort> SplitAddress(const std::string& address) {
  StatusOr<net::HostPort> target = net::SplitHostPort(address);
  if (!target.ok()) return target.status().WithContext("coordinator address");
  return target;
}

// One exchange on a connected socket.
StatusOr<std::vector<std::string>> Exchange(const net::Socket& socket,
                                            const AddressExchangeOptions& options,
                                            Clock::time_point deadline) {
  RequestHeader request{kRequestMagic, static_cast<uint32_t>(options.rank),
                        static_cast<uint32_t>(options.world_size),
                        static_cast<uint32_t>(options.address.size()), 0};
  std::string message(sizeof(request), '\0');
  std::memcpy(message.data(), &request, sizeof(request));
  message += options.address;
  WEFT_RETURN_IF_ERROR(socket.WriteFull(message.data(), message.size(), deadline, "the request"));
  ReplyHeader reply{};
  WEFT_RETURN_IF_ERROR(socket.ReadFull(&reply, sizeof(reply), deadline, "the reply"));
  if (reply.magic != kReplyMagic) return DataLoss("the reply is not the coordinator protocol");
  if (reply.code > static_cast<uint32_t>(Code::kUnauthenticated)) {
    return DataLoss("malformed reply (code ", reply.code, ", ", reply.payload_bytes, " bytes)");
  }
  WEFT_ASSIGN_OR_RETURN(std::string payload, socket.ReadSized(reply.payload_bytes, kMaxPayloadBytes,
                                                              deadline, "the reply's payload"));
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
  StatusOr<net::Listener> listener = net::Listener::Listen(options.host, options.port, 1024);
  if (!listener.ok()) return listener.status().WithContext("coordinator");
  return std::unique_ptr<AddressExchangeServer>(
      new AddressExchangeServer(std::move(listener).value(), options));
}

AddressExchangeServer::AddressExchangeServer(net::Listener listener, const Options& options)
    : listener_(std::move(listener)),
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
  listener_.Shutdown();
  if (accept_thread_.joinable()) accept_thread_.join();
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
    // Wakes every poll slice to look at stopping_; no deadline of its own.
    StatusOr<net::Socket> socket = listener_.Accept(net::DeadlineIn(kAcceptSlice), &stopping_);
    if (!socket.ok()) continue;
    MutexLock lock(mu_);
    ReapFinishedLocked();
    // Each rank holds one connection; a few more allow for retries and strays.
    if (stopping_ || static_cast<int>(connections_.size()) >= 2 * options_.world_size + 16) {
      continue;  // refused: the socket closes here
    }
    auto connection = std::make_unique<Connection>();
    connection->socket = std::move(socket).value();
    Connection* raw = connection.get();
    connection->thread = std::thread([this, raw] { Serve(raw); });
    connections_.push_back(std::move(connection));
  }
}

void AddressExchangeServer::Serve(Connection* connection) {
  const net::Socket& socket = connection->socket;
  const Clock::time_point read_deadline = net::DeadlineIn(kRequestTimeout);
  RequestHeader request{};
  Status read =
      socket.ReadFull(&request, sizeof(request), read_deadline, "the request", &stopping_);
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
      read =
          socket.ReadFull(address.data(), address.size(), read_deadline, "the address", &stopping_);
      reply = read.ok() ? Register(static_cast<int>(request.rank), address) : read;
    }
  }
  // A peer that sent too little or went away gets nothing; any request that arrived is answered.
  if (read.ok() || IsInvalidArgument(reply.status())) {
    if (reply.ok()) {
      SendReply(socket, Code::kOk, *reply);
    } else {
      SendReply(socket, reply.status().code(), reply.status().message());
    }
  }
  connection->finished = true;
  socket.Shutdown();
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
  StatusOr<net::HostPort> target = SplitAddress(options.coordinator);
  if (!target.ok()) return target.status().WithContext(what);
  const Clock::time_point connect_deadline =
      Clock::now() + std::chrono::milliseconds(options.timeout_ms);
  // The coordinator may not listen yet: connecting retries until the deadline.
  StatusOr<net::Socket> socket =
      net::ConnectWithDeadline(target->host, target->port, connect_deadline);
  if (IsDeadlineExceeded(socket.status())) {
    return DeadlineExceeded(what, ": nobody answered within ", options.timeout_ms,
                            " ms (last error: ", socket.status().message(), ")");
  }
  if (!socket.ok()) return socket.status().WithContext(what);
  StatusOr<std::vector<std::string>> addresses =
      Exchange(*socket, options, connect_deadline + kReplyGrace);
  if (!addresses.ok()) return addresses.status().WithContext(what);
  return addresses;
}

StatusOr<ClusterSpec> RendezvousCluster(const ResolvedCluster& resolved,
                                        const std::string& own_address, int64_t timeout_ms,
                                        std::unique_ptr<AddressExchangeServer>* hosted) {
  WEFT_ASSIGN_OR_RETURN(net::HostPort target, SplitAddress(resolved.coordinator));
  if (resolved.rank == 0) {
    AddressExchangeServer::Options options;
    const bool loopback = target.host == "127.0.0.1" || target.host == "localhost";
    options.host = loopback ? "127.0.0.1" : "0.0.0.0";
    options.port = target.port;
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
