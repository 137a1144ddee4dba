// The elastic membership's server and client (see the header): framing, JSON and dispatch.
#include "weft/distributed/cluster/elastic_membership_service.h"

#include <cstring>
#include <utility>

#include <nlohmann/json.hpp>

#include "weft/core/str_util.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

constexpr uint64_t kRequestMagic = 0x57454654454c5251ULL;  // "WEFTELRQ"
constexpr uint64_t kReplyMagic = 0x57454654454c5250ULL;    // "WEFTELRP"
constexpr uint32_t kMaxMessageBytes = 1 << 20;
constexpr std::chrono::milliseconds kAcceptSlice{100};
constexpr std::chrono::milliseconds kRequestTimeout{10000};
constexpr std::chrono::milliseconds kReplySendTimeout{10000};
// How much longer than the call's own timeout a client waits for the reply.
constexpr std::chrono::milliseconds kReplyGrace{5000};
// The longest a watch blocks in the server, whatever the client asked.
constexpr std::chrono::milliseconds kMaxWatch{60000};

struct RequestHeader {
  uint64_t magic;
  uint32_t json_bytes;
  uint32_t reserved;
};
struct ReplyHeader {
  uint64_t magic;
  uint32_t code;
  uint32_t payload_bytes;
};
static_assert(sizeof(RequestHeader) == 16 && sizeof(ReplyHeader) == 16);

Json PositionJson(const ElasticPosition& position) {
  return {{"global_step", position.global_step},
          {"epoch", position.epoch},
          {"batch_index", position.batch_index}};
}

ElasticPosition PositionFromJson(const Json& json) {
  return {json.at("global_step").get<int64_t>(), json.at("epoch").get<int64_t>(),
          json.at("batch_index").get<int64_t>()};
}

// The server's side of one call: the reply's JSON, or why not.
StatusOr<Json> Dispatch(ElasticMembership& membership, const Json& request) {
  const std::string method = request.at("method").get<std::string>();
  if (method == "join") {
    JoinRequest join;
    join.worker = request.at("worker").get<int>();
    join.address = request.at("address").get<std::string>();
    join.has_state = request.at("has_state").get<bool>();
    join.position = PositionFromJson(request.at("position"));
    join.failed_step = request.at("failed_step").get<bool>();
    WEFT_ASSIGN_OR_RETURN(ElasticGeneration generation, membership.Join(join));
    if (generation.finished) return Json{{"finished", true}};
    return Json{{"finished", false},
                {"number", generation.number},
                {"workers", generation.workers},
                {"addresses", generation.addresses},
                {"rank", generation.rank},
                {"resume", generation.resume},
                {"position", PositionJson(generation.position)},
                {"steps_recomputed", generation.steps_recomputed},
                {"membership_changes", generation.membership_changes},
                {"member_lost_at_unix_ms", generation.member_lost_at_unix_ms}};
  }
  if (method == "watch") {
    const int64_t timeout_ms = request.at("timeout_ms").get<int64_t>();
    const MembershipChange change = membership.Watch(
        request.at("generation").get<int64_t>(),
        std::min(kMaxWatch, std::chrono::milliseconds(std::max<int64_t>(timeout_ms, 0))));
    return Json{{"pending", change.pending}, {"lost", change.lost}};
  }
  return InvalidArgument("unknown method '", method, "' (expected join or watch)");
}

void SendReply(const net::Socket& socket, Code code, const std::string& payload) {
  const ReplyHeader header{kReplyMagic, static_cast<uint32_t>(code),
                           static_cast<uint32_t>(payload.size())};
  std::string message(sizeof(header), '\0');
  std::memcpy(message.data(), &header, sizeof(header));
  message += payload;
  // A worker that went away gets nothing; there is nobody else to tell.
  socket.WriteFull(message.data(), message.size(), net::DeadlineIn(kReplySendTimeout), "the reply")
      .IgnoreError();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ElasticMembershipServer

StatusOr<std::unique_ptr<ElasticMembershipServer>> ElasticMembershipServer::Create(
    ElasticMembership* membership, const std::string& host, int port) {
  if (membership == nullptr) return InvalidArgument("elastic membership server: no membership");
  StatusOr<net::Listener> listener = net::Listener::Listen(host, port, 256);
  if (!listener.ok()) return listener.status().WithContext("elastic membership server");
  return std::unique_ptr<ElasticMembershipServer>(
      new ElasticMembershipServer(membership, std::move(listener).value()));
}

ElasticMembershipServer::ElasticMembershipServer(ElasticMembership* membership,
                                                 net::Listener listener)
    : membership_(membership), listener_(std::move(listener)) {
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

ElasticMembershipServer::~ElasticMembershipServer() { Shutdown(); }

void ElasticMembershipServer::Shutdown() {
  {
    MutexLock lock(mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  stopping_ = true;
  membership_->Shutdown();
  listener_.Shutdown();
  if (accept_thread_.joinable()) accept_thread_.join();
  ConnectionThreads connections;
  {
    MutexLock lock(mu_);
    connections.swap(connections_);
  }
  for (auto& connection : connections) connection->socket.Shutdown();
  JoinAndCloseConnections(&connections);
}

void ElasticMembershipServer::AcceptLoop() {
  while (!stopping_) {
    StatusOr<net::Socket> socket = listener_.Accept(net::DeadlineIn(kAcceptSlice), &stopping_);
    if (!socket.ok()) continue;
    MutexLock lock(mu_);
    ReapFinishedConnections(&connections_);
    // Each worker holds at most a join and a watch; more are strays, refused (closed here).
    if (stopping_ || connections_.size() >= 4096) continue;
    auto connection = std::make_unique<ConnectionThread>();
    connection->socket = std::move(socket).value();
    ConnectionThread* raw = connection.get();
    connection->thread = std::thread([this, raw] { Serve(raw); });
    connections_.push_back(std::move(connection));
  }
}

void ElasticMembershipServer::Serve(ConnectionThread* connection) {
  const net::Socket& socket = connection->socket;
  const Clock::time_point deadline = net::DeadlineIn(kRequestTimeout);
  RequestHeader header{};
  Status read = socket.ReadFull(&header, sizeof(header), deadline, "the request", &stopping_);
  StatusOr<std::string> body = Unavailable("no request");
  if (!read.ok()) {
    body = read;
  } else if (header.magic != kRequestMagic) {
    body = InvalidArgument("not an elastic membership request (bad magic number)");
  } else {
    body =
        socket.ReadSized(header.json_bytes, kMaxMessageBytes, deadline, "the request", &stopping_);
  }
  if (body.ok()) {
    StatusOr<Json> reply = InvalidArgument("the request is not JSON");
    try {
      const Json request = Json::parse(*body);
      reply = Dispatch(*membership_, request);
    } catch (const Json::exception& error) {
      reply = InvalidArgument("malformed elastic membership request: ", error.what());
    }
    if (reply.ok()) {
      SendReply(socket, Code::kOk, reply->dump());
    } else {
      SendReply(socket, reply.status().code(), reply.status().message());
    }
  } else if (IsInvalidArgument(body.status()) || IsDataLoss(body.status())) {
    SendReply(socket, body.status().code(), body.status().message());
  }
  connection->finished = true;
  socket.Shutdown();
}

// ---------------------------------------------------------------------------------------------
// ElasticMembershipClient

StatusOr<std::string> ElasticMembershipClient::Call(const std::string& request,
                                                    std::chrono::milliseconds timeout,
                                                    const std::atomic<bool>* stopping) const {
  WEFT_ASSIGN_OR_RETURN(net::HostPort target, net::SplitHostPort(address_));
  const Clock::time_point deadline = Clock::now() + timeout + kReplyGrace;
  WEFT_ASSIGN_OR_RETURN(net::Socket socket,
                        net::ConnectWithDeadline(target.host, target.port,
                                                 net::DeadlineIn(std::chrono::seconds(10))));
  const RequestHeader header{kRequestMagic, static_cast<uint32_t>(request.size()), 0};
  std::string message(sizeof(header), '\0');
  std::memcpy(message.data(), &header, sizeof(header));
  message += request;
  WEFT_RETURN_IF_ERROR(socket.WriteFull(message.data(), message.size(), deadline, "the request"));
  ReplyHeader reply{};
  WEFT_RETURN_IF_ERROR(socket.ReadFull(&reply, sizeof(reply), deadline, "the reply", stopping));
  if (reply.magic != kReplyMagic) return DataLoss("the reply is not the membership protocol");
  if (reply.code > static_cast<uint32_t>(Code::kUnauthenticated)) {
    return DataLoss("malformed reply (code ", reply.code, ")");
  }
  WEFT_ASSIGN_OR_RETURN(std::string payload,
                        socket.ReadSized(reply.payload_bytes, kMaxMessageBytes, deadline,
                                         "the reply's payload", stopping));
  if (reply.code != 0) return Status(static_cast<Code>(reply.code), payload);
  return payload;
}

StatusOr<ElasticGeneration> ElasticMembershipClient::Join(const JoinRequest& request,
                                                          std::chrono::milliseconds timeout,
                                                          const std::atomic<bool>* stopping) const {
  const Json json{{"method", "join"},
                  {"worker", request.worker},
                  {"address", request.address},
                  {"has_state", request.has_state},
                  {"position", PositionJson(request.position)},
                  {"failed_step", request.failed_step}};
  const std::string what =
      StrCat("worker ", request.worker, " joining the elastic membership at ", address_);
  StatusOr<std::string> payload = Call(json.dump(), timeout, stopping);
  if (!payload.ok()) return payload.status().WithContext(what);
  try {
    const Json reply = Json::parse(*payload);
    ElasticGeneration generation;
    generation.finished = reply.at("finished").get<bool>();
    if (generation.finished) return generation;
    generation.number = reply.at("number").get<int64_t>();
    generation.workers = reply.at("workers").get<std::vector<int>>();
    generation.addresses = reply.at("addresses").get<std::vector<std::string>>();
    generation.rank = reply.at("rank").get<int>();
    generation.resume = reply.at("resume").get<bool>();
    generation.position = PositionFromJson(reply.at("position"));
    generation.steps_recomputed = reply.at("steps_recomputed").get<int64_t>();
    generation.membership_changes = reply.at("membership_changes").get<int64_t>();
    generation.member_lost_at_unix_ms = reply.at("member_lost_at_unix_ms").get<int64_t>();
    if (generation.workers.size() != generation.addresses.size() || generation.rank < 0 ||
        generation.rank >= static_cast<int>(generation.workers.size())) {
      return DataLoss(what, ": the generation's members, addresses and rank disagree");
    }
    return generation;
  } catch (const Json::exception& error) {
    return DataLoss(what, ": malformed reply: ", error.what());
  }
}

StatusOr<MembershipChange> ElasticMembershipClient::Watch(int64_t generation,
                                                          std::chrono::milliseconds timeout,
                                                          const std::atomic<bool>* stopping) const {
  const Json json{{"method", "watch"}, {"generation", generation}, {"timeout_ms", timeout.count()}};
  StatusOr<std::string> payload = Call(json.dump(), timeout, stopping);
  if (!payload.ok()) {
    return payload.status().WithContext(StrCat("watching the elastic membership at ", address_));
  }
  try {
    const Json reply = Json::parse(*payload);
    MembershipChange change;
    change.pending = reply.at("pending").get<bool>();
    change.lost = reply.at("lost").get<std::vector<int>>();
    return change;
  } catch (const Json::exception& error) {
    return DataLoss("the elastic membership at ", address_, ": malformed reply: ", error.what());
  }
}

}  // namespace weft
