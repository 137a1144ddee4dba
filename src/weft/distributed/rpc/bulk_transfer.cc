#include "weft/distributed/rpc/bulk_transfer.h"

#include <utility>

#include "weft/core/mutex.h"

namespace weft {
namespace {

// How often blocked server threads look at the stopping flag.
constexpr std::chrono::milliseconds kPollInterval{100};
// How long the server waits for the rest of a request once its magic came, and for a reply to
// leave (a client that stopped reading is not waited on for ever).
constexpr std::chrono::milliseconds kServerIoTimeout{60000};

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
static_assert(sizeof(RequestHeader) == 16 && sizeof(ReplyHeader) == 24);
// The hello is the socket layer's token hello; its limit is the one this protocol documents.
static_assert(kMaxBulkTokenBytes == net::kMaxHelloTokenBytes);

}  // namespace

// ---------------------------------------------------------------------------------------------
// BulkTransferServer

StatusOr<std::unique_ptr<BulkTransferServer>> BulkTransferServer::Create(const Options& options) {
  StatusOr<net::Listener> listener = net::Listener::Listen(options.host, options.port);
  if (!listener.ok()) return listener.status().WithContext("bulk transfer server");
  return std::unique_ptr<BulkTransferServer>(
      new BulkTransferServer(std::move(listener).value(), options));
}

BulkTransferServer::BulkTransferServer(net::Listener listener, const Options& options)
    : listener_(std::move(listener)),
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
  listener_.Shutdown();
  if (accept_thread_.joinable()) accept_thread_.join();
  ConnectionThreads connections;
  {
    MutexLock lock(mu_);
    connections.swap(connections_);
    offered_.clear();
  }
  for (auto& connection : connections) {
    // Wakes a thread blocked sending or receiving.
    connection->socket.Shutdown();
  }
  JoinAndCloseConnections(&connections);
}

void BulkTransferServer::ReapFinishedLocked() { ReapFinishedConnections(&connections_); }

void BulkTransferServer::AcceptLoop() {
  while (!stopping_) {
    StatusOr<net::Socket> socket = listener_.Accept(net::DeadlineIn(kPollInterval), &stopping_);
    if (!socket.ok()) continue;
    MutexLock lock(mu_);
    ReapFinishedLocked();
    if (stopping_ || static_cast<int>(connections_.size()) >= max_connections_) {
      continue;  // refused (too many connections): the socket closes here
    }
    auto connection = std::make_unique<Connection>();
    connection->socket = std::move(socket).value();
    Connection* raw = connection.get();
    connection->thread = std::thread([this, raw] { ServeConnection(raw); });
    connections_.push_back(std::move(connection));
  }
}

bool BulkTransferServer::Authenticate(const net::Socket& socket) {
  const net::Clock::time_point deadline = net::DeadlineIn(kServerIoTimeout);
  StatusOr<std::string> token = net::ReadTokenHelloAfterMagic(socket, deadline);
  // A server without a token accepts any hello.
  const bool ok = token.ok() && net::CheckHelloToken(socket, token_, *token).ok();
  ReplyHeader reply{kBulkReplyMagic, 0, 0, 0};
  if (!ok) reply.code = static_cast<uint32_t>(Code::kUnauthenticated);
  return socket.WriteFull(&reply, sizeof(reply), deadline, "the hello's reply").ok() && ok;
}

void BulkTransferServer::ServeConnection(Connection* connection) {
  const net::Socket& socket = connection->socket;
  bool authenticated = token_.empty();
  while (!stopping_) {
    RequestHeader request;
    // The magic first: a hello's header is the same size, but what follows it differs. A pooled
    // connection may stay idle for long: no deadline but Shutdown (stopping_).
    if (!socket
             .ReadFull(&request.magic, sizeof(request.magic), net::Clock::time_point::max(),
                       "a request", &stopping_)
             .ok()) {
      break;
    }
    const net::Clock::time_point deadline = net::DeadlineIn(kServerIoTimeout);
    if (request.magic == kBulkHelloMagic) {
      if (!Authenticate(socket)) break;
      authenticated = true;
      continue;
    }
    if (request.magic != kBulkRequestMagic) break;  // not our protocol: hang up
    if (!socket.ReadFull(&request.ticket, sizeof(request.ticket), deadline, "a ticket").ok()) break;
    Tensor tensor;
    ReplyHeader reply{kBulkReplyMagic, 0, 0, 0};
    if (!authenticated) {
      reply.code = static_cast<uint32_t>(Code::kUnauthenticated);
      socket.WriteFull(&reply, sizeof(reply), deadline, "the reply").IgnoreError();
      break;
    }
    if (!Claim(request.ticket, &tensor)) {
      reply.code = static_cast<uint32_t>(Code::kNotFound);
      if (!socket.WriteFull(&reply, sizeof(reply), deadline, "the reply").ok()) break;
      continue;
    }
    reply.num_bytes = tensor.TotalBytes();
    if (!socket.WriteFull(&reply, sizeof(reply), deadline, "the reply").ok()) break;
    if (reply.num_bytes > 0 &&
        !socket.WriteFull(tensor.raw_data(), reply.num_bytes, deadline, "the tensor").ok()) {
      break;
    }
  }
  // Counted as ended before the peer hears of it, so that a peer that saw the hang-up finds the
  // slot free. The peer is told at once; the descriptor is closed after the join, so that
  // Shutdown() never touches a number the system has already handed out again.
  connection->finished = true;
  socket.Shutdown();
}

// ---------------------------------------------------------------------------------------------
// BulkTransferClient

BulkTransferClient::BulkTransferClient(const Options& options)
    : options_(options),
      pool_(std::make_unique<ThreadPool>("bulk_transfer_client", options.num_threads)) {}

BulkTransferClient::~BulkTransferClient() { pool_.reset(); }

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
  net::Socket socket = TakeIdle(peer);
  if (socket.valid()) {
    bool transport_failed = false;
    Status status = FetchOn(socket, ticket, destination, num_bytes, &transport_failed);
    if (!transport_failed) {
      ReturnIdle(peer, std::move(socket));
      return status;
    }
  }
  // One attempt: a server that is not there fails the fetch now.
  StatusOr<net::Socket> connected =
      net::ConnectWithDeadline(host, port, net::DeadlineIn(IoTimeout()), /*retry_refused=*/false);
  if (!connected.ok()) return connected.status().WithContext("bulk transfer");
  socket = std::move(connected).value();
  if (!options_.token.empty()) WEFT_RETURN_IF_ERROR(SendHello(socket));
  bool transport_failed = false;
  Status status = FetchOn(socket, ticket, destination, num_bytes, &transport_failed);
  if (!transport_failed) ReturnIdle(peer, std::move(socket));
  return status;
}

Status BulkTransferClient::FetchOn(const net::Socket& socket, uint64_t ticket, void* destination,
                                   size_t num_bytes, bool* transport_failed) {
  *transport_failed = true;
  const std::string what = StrCat("bulk fetch of ticket ", ticket, " from ", socket.peer());
  RequestHeader request{kBulkRequestMagic, ticket};
  WEFT_RETURN_IF_ERROR(
      socket.WriteFull(&request, sizeof(request), net::DeadlineIn(IoTimeout()), "the request")
          .WithContext(what));
  ReplyHeader reply;
  WEFT_RETURN_IF_ERROR(
      socket.ReadFull(&reply, sizeof(reply), net::DeadlineIn(IoTimeout()), "the reply")
          .WithContext(what));
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
  WEFT_RETURN_IF_ERROR(
      socket.ReadFull(destination, num_bytes, net::DeadlineIn(IoTimeout()), "the tensor")
          .WithContext(what));
  *transport_failed = false;
  return Status::OK();
}

Status BulkTransferClient::SendHello(const net::Socket& socket) {
  const std::string what = StrCat("bulk transfer hello to ", socket.peer());
  const net::Clock::time_point deadline = net::DeadlineIn(IoTimeout());
  WEFT_RETURN_IF_ERROR(
      net::WriteTokenHello(socket, kBulkHelloMagic, options_.token, deadline).WithContext(what));
  ReplyHeader reply;
  Status got = socket.ReadFull(&reply, sizeof(reply), deadline, "the hello's reply");
  if (!got.ok() || reply.magic != kBulkReplyMagic) {
    return Unavailable(what, ": no reply", got.ok() ? "" : StrCat(" (", got.message(), ")"));
  }
  if (reply.code != 0) {
    return Unauthenticated("bulk transfer to ", socket.peer(), ": the server refused the token");
  }
  return Status::OK();
}

net::Socket BulkTransferClient::TakeIdle(const std::string& peer) {
  MutexLock lock(mu_);
  auto it = idle_.find(peer);
  if (it == idle_.end() || it->second.empty()) return net::Socket();
  net::Socket socket = std::move(it->second.back());
  it->second.pop_back();
  return socket;
}

void BulkTransferClient::ReturnIdle(const std::string& peer, net::Socket socket) {
  MutexLock lock(mu_);
  std::vector<net::Socket>& sockets = idle_[peer];
  // Beyond the limit the socket closes here.
  if (static_cast<int>(sockets.size()) < options_.max_idle_connections_per_peer) {
    sockets.push_back(std::move(socket));
  }
}

}  // namespace weft
