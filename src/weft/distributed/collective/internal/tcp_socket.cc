#include "weft/distributed/collective/internal/tcp_socket.h"

#include <cstring>

#include <fcntl.h>

namespace weft::internal {
namespace {

constexpr uint64_t kHandshakeMagic = 0x5745465454435031ULL;  // "WEFTTCP1"
constexpr uint64_t kReplyMagic = 0x5745465454435032ULL;      // "WEFTTCP2"
constexpr uint32_t kVersion = 2;                             // 2: the token hello comes first
// An accepted connection gets this long to say who it is, so that a silent stranger cannot hold
// up the peers queued behind it.
constexpr std::chrono::milliseconds kHandshakeTimeout{2000};

// What follows the token hello.
struct Ranks {
  uint32_t version;
  int32_t from_rank;
  int32_t to_rank;
  int32_t world_size;
};
struct HandshakeReply {
  uint64_t magic;
  int32_t rank;
  int32_t accepted;
};
static_assert(sizeof(Ranks) == 16 && sizeof(HandshakeReply) == 16);

net::Clock::time_point When(const Deadline& deadline) {
  return net::Clock::now() + deadline.Remaining();
}

// Dials `address` until it answers or the deadline passes (the peer's listener exists before the
// group does, but a refused connection is retried in case it is being set up).
Status DialPeer(const TransportOptions& options, int peer, const std::string& address,
                const Deadline& deadline, net::Socket* out) {
  const std::string who = StrCat("TCP transport of group '", options.group_token, "': member ",
                                 MemberName(options, peer), " at ", address);
  StatusOr<net::HostPort> target = net::SplitHostPort(address);
  if (!target.ok()) return target.status().WithContext(who);
  StatusOr<net::Socket> socket =
      net::ConnectWithDeadline(target->host, target->port, When(deadline));
  if (!socket.ok()) return Unavailable(who, ": ", socket.status().message());
  *out = std::move(socket).value();
  WEFT_RETURN_IF_ERROR(
      net::WriteTokenHello(*out, kHandshakeMagic, options.group_token, When(deadline))
          .WithContext(who));
  const Ranks ranks{kVersion, options.rank, peer, options.world_size};
  WEFT_RETURN_IF_ERROR(
      out->WriteFull(&ranks, sizeof(ranks), When(deadline), "the handshake").WithContext(who));
  HandshakeReply reply{};
  Status got = out->ReadFull(&reply, sizeof(reply), When(deadline), "the handshake reply");
  if (!got.ok()) {
    return Unavailable(who, ": no handshake reply (", got.message(),
                       "); is it a member of this group (same token and size)?");
  }
  if (reply.magic != kReplyMagic || reply.rank != peer || reply.accepted != 1) {
    return DataLoss(who, ": bad handshake reply (magic ", reply.magic, ", rank ", reply.rank,
                    "): not a Weft collective transport of this group");
  }
  return Status::OK();
}

// Reads and checks one accepted connection's handshake; returns the peer's rank or why not.
StatusOr<int> AcceptHandshake(const TransportOptions& options, const net::Socket& socket,
                              const std::vector<net::Socket>& sockets) {
  const net::Clock::time_point deadline = net::DeadlineIn(kHandshakeTimeout);
  uint64_t magic = 0;
  WEFT_RETURN_IF_ERROR(socket.ReadFull(&magic, sizeof(magic), deadline, "the handshake"));
  if (magic != kHandshakeMagic) {
    return DataLoss("not a Weft collective handshake (magic ", magic, ")");
  }
  WEFT_ASSIGN_OR_RETURN(std::string token, net::ReadTokenHelloAfterMagic(socket, deadline));
  Ranks hello{};
  WEFT_RETURN_IF_ERROR(socket.ReadFull(&hello, sizeof(hello), deadline, "the handshake's ranks"));
  if (hello.version != kVersion) {
    return DataLoss("handshake version ", hello.version, "; expected version ", kVersion);
  }
  // The group token names the group; it is no secret, so a mismatch may show it.
  if (token != options.group_token || hello.world_size != options.world_size ||
      hello.to_rank != options.rank) {
    return FailedPrecondition("handshake for rank ", hello.to_rank, " of group '", token,
                              "' of size ", hello.world_size, " from rank ", hello.from_rank);
  }
  if (hello.from_rank <= options.rank || hello.from_rank >= options.world_size ||
      sockets[hello.from_rank].valid()) {
    return FailedPrecondition("unexpected or repeated handshake from rank ", hello.from_rank);
  }
  const HandshakeReply reply{kReplyMagic, options.rank, 1};
  WEFT_RETURN_IF_ERROR(socket.WriteFull(&reply, sizeof(reply), deadline, "the handshake reply"));
  return hello.from_rank;
}

// The descriptors, non-blocking (the exchange polls them), handed to the caller.
std::vector<int> Release(std::vector<net::Socket>* sockets) {
  std::vector<int> fds;
  for (net::Socket& socket : *sockets) {
    if (socket.valid()) fcntl(socket.fd(), F_SETFL, fcntl(socket.fd(), F_GETFL) | O_NONBLOCK);
    fds.push_back(socket.Release());
  }
  return fds;
}

}  // namespace

StatusOr<std::vector<int>> ConnectMesh(const TransportOptions& options,
                                       const net::Listener& listener,
                                       const std::vector<std::string>& addresses,
                                       const Deadline& deadline) {
  std::vector<net::Socket> sockets(options.world_size);  // closed on any failure
  // Dial the lower ranks: they accept while this member dials, and rank 0 only accepts, so no
  // two members wait on each other.
  for (int peer = 0; peer < options.rank; ++peer) {
    WEFT_RETURN_IF_ERROR(DialPeer(options, peer, addresses[peer], deadline, &sockets[peer]));
  }
  std::string rejected;
  for (;;) {
    std::string missing;
    for (int peer = options.rank + 1; peer < options.world_size; ++peer) {
      if (!sockets[peer].valid()) {
        missing += StrCat(missing.empty() ? "" : ", ", MemberName(options, peer));
      }
    }
    if (missing.empty()) return Release(&sockets);
    StatusOr<net::Socket> accepted = listener.Accept(When(deadline));
    if (IsDeadlineExceeded(accepted.status())) {
      return DeadlineExceeded("TCP transport of group '", options.group_token, "': member ",
                              MemberName(options, options.rank), " at ", addresses[options.rank],
                              ": members that never connected within ", options.timeout.count(),
                              " ms: ", missing,
                              rejected.empty() ? "" : "; rejected connections: ", rejected);
    }
    if (!accepted.ok()) return accepted.status();
    StatusOr<int> peer = AcceptHandshake(options, *accepted, sockets);
    if (!peer.ok()) {
      // Not the right peer: drop it and keep waiting; the reason shows if nobody right comes.
      rejected += StrCat(rejected.empty() ? "" : "; ", "from ", accepted->peer(), ": ",
                         peer.status().ToString());
      continue;
    }
    sockets[*peer] = std::move(accepted).value();
  }
}

}  // namespace weft::internal
