// TcpTransport (see the header). Every operation starts with a hello from each member to each
// peer carrying the operation's identity (and, for one-exchange operations, the payload), so every
// member checks every other member's call before it uses any of its data; the ring's messages
// follow the hello on the same connections, so the check costs no extra round trip.
#include "weft/distributed/collective/tcp_transport.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "weft/distributed/collective/internal/tcp_exchange.h"
#include "weft/distributed/collective/internal/tcp_socket.h"
#include "weft/distributed/collective/internal/transport_skeleton.h"
#include "weft/distributed/collective/internal/transport_util.h"

namespace weft {
namespace {

using internal::Deadline;
using internal::Exchange;
using internal::FlatAllReduce;
using internal::MessageHeader;
using internal::OpIdentity;

// One pipelining unit of the ring: `count` elements at `offset` of the flat tensor.
struct RingItem {
  int64_t offset;
  int64_t count;
  int step;  // 0 .. 2n-3: reduce-scatter steps first, then all-gather steps
};

// Closing a socket with unread bytes makes the kernel reset the connection, and a reset makes
// the peer lose what it had not read yet, such as this member's hello that would tell it why the
// operation failed. So: say goodbye (FIN after everything sent), read what is there, then close.
void CloseGracefully(int fd) {
  ::shutdown(fd, SHUT_WR);
  char sink[64 << 10];
  for (int i = 0; i < 256 && ::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; ++i) {
  }
  ::close(fd);
}

class TcpTransport final : public internal::TransportSkeleton {
 public:
  TcpTransport(const TransportOptions& options, const TcpTransportTuning& tuning,
               std::vector<int> fds, int abort_fd)
      : TransportSkeleton(options), tuning_(tuning), fds_(std::move(fds)), abort_fd_(abort_fd) {}
  ~TcpTransport() override {
    for (int fd : fds_) {
      if (fd >= 0) CloseGracefully(fd);
    }
    ::close(abort_fd_);
  }

 private:
  Status RunAllReduce(const std::string& label, const FlatAllReduce& flat,
                      const Deadline& deadline) override;
  Status RunBroadcast(const std::string& label, const OpIdentity& identity, int root, Tensor* value,
                      const Deadline& deadline) override;
  Status RunAllGather(const std::string& label, const OpIdentity& identity, const Tensor& input,
                      Tensor* output, const Deadline& deadline) override;

  void WakeBlockedCall() override {
    const uint64_t one = 1;
    // Wakes the blocked call's poll; the eventfd stays readable, which is harmless once poisoned.
    [[maybe_unused]] ssize_t ignored = ::write(abort_fd_, &one, sizeof(one));
  }

  // Poisons the transport. Unless the peers see the problem themselves (they disagree about the
  // operation: each member checks every hello), the connections are shut down so that peers
  // blocked on this member fail at once instead of at their deadline.
  Status Fail(const Status& status) override;
  // Adds to a deadline error how far each member got.
  Status Explain(const Status& status) override;
  void Completed(const OpIdentity& identity) override {
    last_completed_ =
        StrCat("instance_key ", identity.instance_key, " sequence ", identity.sequence);
  }
  Exchange MakeExchange(const std::string& label, const Deadline& deadline) {
    return Exchange(options_, fds_, abort_fd_, label, deadline, [this]() -> Status {
      return poison_.aborting() ? poison_.status() : Status::OK();
    });
  }
  MessageHeader Header(const OpIdentity& identity, uint32_t phase, uint32_t index,
                       uint64_t payload_bytes) const {
    MessageHeader header;
    header.from_rank = options_.rank;
    header.phase = phase;
    header.index = index;
    header.payload_bytes = payload_bytes;
    header.identity = identity;
    return header;
  }
  // Checks a peer's hello against this member's identity and the payload size it implies.
  Status CheckHello(const std::string& label, int peer, const MessageHeader& header,
                    const OpIdentity& identity, uint64_t payload_bytes);

  Status AllReduceSmall(const std::string& label, const FlatAllReduce& flat,
                        const Deadline& deadline);
  Status AllReduceRing(const std::string& label, const FlatAllReduce& flat,
                       const Deadline& deadline);
  // Fills the ring's sends and receives; returns how many sends are the first step's.
  size_t BuildRing(int64_t total, size_t element_size, std::vector<RingItem>* sends,
                   std::vector<RingItem>* receives) const;

  const TcpTransportTuning tuning_;
  const std::vector<int> fds_;  // by rank; -1 at this member
  const int abort_fd_;
  std::vector<char> scratch_;  // peers' inputs in the one-exchange all-reduce
  // For deadline errors: the last operation this member completed, and the last one each peer
  // was seen to start (its hello).
  std::string last_completed_ = "none";
  std::vector<std::string> last_started_ = std::vector<std::string>(options_.world_size, "none");
};

Status TcpTransport::Fail(const Status& status) {
  bool poisoned_now = false;
  Status first = poison_.Poison(status, &poisoned_now);
  if (!IsInvalidArgument(status) || !poisoned_now) {
    for (int fd : fds_) {
      if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
    }
  }
  return first;
}

Status TcpTransport::Explain(const Status& status) {
  if (!IsDeadlineExceeded(status)) return status;
  std::string progress =
      StrCat("; last operation completed by member ", Name(options_.rank), ": ", last_completed_);
  for (int p = 0; p < options_.world_size; ++p) {
    if (p != options_.rank)
      progress += StrCat("; last started by ", Name(p), ": ", last_started_[p]);
  }
  return DeadlineExceeded(status.message(), progress);
}

Status TcpTransport::CheckHello(const std::string& label, int peer, const MessageHeader& header,
                                const OpIdentity& identity, uint64_t payload_bytes) {
  if (header.phase != internal::kHello) {
    return DataLoss(label, ": member ", Name(peer), " sent message phase ", header.phase,
                    " where member ", Name(options_.rank), " expected the operation's start");
  }
  WEFT_RETURN_IF_ERROR(
      internal::CheckSameOp(options_, label, options_.rank, identity, peer, header.identity));
  last_started_[peer] =
      StrCat("instance_key ", identity.instance_key, " sequence ", identity.sequence);
  if (header.payload_bytes != payload_bytes) {
    return DataLoss(label, ": member ", Name(peer), " sent ", header.payload_bytes,
                    " bytes; expected ", payload_bytes);
  }
  return Status::OK();
}

Status TcpTransport::RunAllReduce(const std::string& label, const FlatAllReduce& flat,
                                  const Deadline& deadline) {
  const size_t bytes = flat.identity.num_elements * flat.element_size;
  if (options_.world_size == 1 || bytes <= tuning_.small_bytes) {
    return AllReduceSmall(label, flat, deadline);
  }
  return AllReduceRing(label, flat, deadline);
}

// Every member sends its whole input to every peer and sums all of them in rank order.
Status TcpTransport::AllReduceSmall(const std::string& label, const FlatAllReduce& flat,
                                    const Deadline& deadline) {
  const int n = options_.world_size;
  const size_t bytes = flat.identity.num_elements * flat.element_size;
  scratch_.resize(bytes * n);
  Exchange exchange = MakeExchange(label, deadline);
  const MessageHeader hello = Header(flat.identity, internal::kHello, 0, bytes);
  for (int p = 0; p < n; ++p) {
    if (p == options_.rank) continue;
    exchange.Send(p, hello, flat.input);
    exchange.Expect(p, 1);
  }
  WEFT_RETURN_IF_ERROR(exchange.Run(
      [&](int peer, const MessageHeader& header) -> StatusOr<char*> {
        WEFT_RETURN_IF_ERROR(CheckHello(label, peer, header, flat.identity, bytes));
        return scratch_.data() + peer * bytes;
      },
      [](int, const MessageHeader&) { return Status::OK(); }));
  std::vector<const char*> sources(n);
  for (int m = 0; m < n; ++m) {
    sources[m] = m == options_.rank ? flat.input : scratch_.data() + m * bytes;
  }
  internal::SumInOrder(static_cast<DataType>(flat.identity.dtype), sources, flat.output,
                       flat.identity.num_elements, std::bit_cast<double>(flat.identity.param));
  return Status::OK();
}

// The ring: n segments; in reduce-scatter step s member r sends segment (r - s) to r + 1 and
// receives segment (r - s - 1) from r - 1, adding its input; after n - 1 steps it holds the final
// segment (r + 1), which it divides and passes on in n - 1 all-gather steps. Each segment travels
// in chunks, and a received chunk is forwarded as soon as it is reduced, so sending, receiving and
// reducing overlap. What a member sends at step s + 1 is what it received at step s: sends are
// the first step's chunks followed by the receives.
size_t TcpTransport::BuildRing(int64_t total, size_t element_size, std::vector<RingItem>* sends,
                               std::vector<RingItem>* receives) const {
  const int n = options_.world_size;
  const int r = options_.rank;
  const int64_t chunk = std::max<int64_t>(1, tuning_.chunk_bytes / element_size);
  auto add = [&](std::vector<RingItem>* items, int segment, int step) {
    const auto [begin, end] = internal::SliceRange(total, segment, n, element_size);
    for (int64_t at = begin; at < end; at += chunk) {
      items->push_back(RingItem{at, std::min(chunk, end - at), step});
    }
  };
  const auto mod = [n](int v) { return ((v % n) + n) % n; };
  add(sends, r, 0);
  const size_t first_step = sends->size();
  for (int step = 0; step < 2 * n - 2; ++step) {
    const int segment = step < n - 1 ? mod(r - step - 1) : mod(r - (step - (n - 1)));
    add(receives, segment, step);
  }
  // The last step's receives are not passed on.
  for (const RingItem& item : *receives) {
    if (item.step < 2 * n - 3) sends->push_back(item);
  }
  return first_step;
}

Status TcpTransport::AllReduceRing(const std::string& label, const FlatAllReduce& flat,
                                   const Deadline& deadline) {
  const int n = options_.world_size;
  const int right = (options_.rank + 1) % n;
  const int left = (options_.rank + n - 1) % n;
  const size_t es = flat.element_size;
  const auto dtype = static_cast<DataType>(flat.identity.dtype);
  const double divisor = std::bit_cast<double>(flat.identity.param);
  std::vector<RingItem> sends, receives;
  const size_t first_step = BuildRing(flat.identity.num_elements, es, &sends, &receives);

  Exchange exchange = MakeExchange(label, deadline);
  const MessageHeader hello = Header(flat.identity, internal::kHello, 0, 0);
  for (int p = 0; p < n; ++p) {
    if (p == options_.rank) continue;
    exchange.Send(p, hello, nullptr);
    exchange.Expect(p, 1);
  }
  exchange.Expect(left, static_cast<int>(receives.size()));
  auto send = [&](size_t index) {
    const RingItem& item = sends[index];
    const char* from = (index < first_step ? flat.input : flat.output) + item.offset * es;
    exchange.Send(
        right,
        Header(flat.identity, internal::kRing, static_cast<uint32_t>(index), item.count * es),
        from);
  };
  for (size_t i = 0; i < first_step; ++i) send(i);
  size_t next = 0;  // the next ring message expected from the left
  return exchange.Run(
      [&](int peer, const MessageHeader& header) -> StatusOr<char*> {
        if (header.phase == internal::kHello) {
          WEFT_RETURN_IF_ERROR(CheckHello(label, peer, header, flat.identity, 0));
          return nullptr;
        }
        if (peer != left || next >= receives.size() || !(header.identity == flat.identity) ||
            header.index != next || header.payload_bytes != receives[next].count * es) {
          return DataLoss(label, ": member ", Name(peer), " sent ring message ", header.index,
                          " of ", header.payload_bytes, " bytes for ",
                          internal::DescribeOp(header.identity), "; member ", Name(options_.rank),
                          " expected message ", next, " from ", Name(left));
        }
        return flat.output + receives[next].offset * es;
      },
      [&](int, const MessageHeader& header) -> Status {
        if (header.phase == internal::kHello) return Status::OK();
        const RingItem& item = receives[next];
        if (item.step < n - 1) {
          // The partial sum from the left plus this member's input; the last step finishes it.
          char* at = flat.output + item.offset * es;
          internal::AddInto(dtype, at, flat.input + item.offset * es, item.count,
                            item.step == n - 2 ? divisor : 1.0);
        }
        if (first_step + next < sends.size()) send(first_step + next);
        ++next;
        return Status::OK();
      });
}

Status TcpTransport::RunBroadcast(const std::string& label, const OpIdentity& identity, int root,
                                  Tensor* value, const Deadline& deadline) {
  const uint64_t bytes = value->TotalBytes();
  const bool is_root = options_.rank == root;
  char* data = static_cast<char*>(value->raw_data());
  Exchange exchange = MakeExchange(label, deadline);
  for (int p = 0; p < options_.world_size; ++p) {
    if (p == options_.rank) continue;
    exchange.Send(p, Header(identity, internal::kHello, 0, is_root ? bytes : 0), data);
    exchange.Expect(p, 1);
  }
  return exchange.Run(
      [&](int peer, const MessageHeader& header) -> StatusOr<char*> {
        WEFT_RETURN_IF_ERROR(CheckHello(label, peer, header, identity, peer == root ? bytes : 0));
        return peer == root ? data : nullptr;
      },
      [](int, const MessageHeader&) { return Status::OK(); });
}

Status TcpTransport::RunAllGather(const std::string& label, const OpIdentity& identity,
                                  const Tensor& input, Tensor* output, const Deadline& deadline) {
  const uint64_t bytes = input.TotalBytes();
  const char* in = static_cast<const char*>(input.raw_data());
  char* out = static_cast<char*>(output->raw_data());
  if (bytes > 0) std::memcpy(out + options_.rank * bytes, in, bytes);
  Exchange exchange = MakeExchange(label, deadline);
  for (int p = 0; p < options_.world_size; ++p) {
    if (p == options_.rank) continue;
    exchange.Send(p, Header(identity, internal::kHello, 0, bytes), in);
    exchange.Expect(p, 1);
  }
  return exchange.Run(
      [&](int peer, const MessageHeader& header) -> StatusOr<char*> {
        WEFT_RETURN_IF_ERROR(CheckHello(label, peer, header, identity, bytes));
        return bytes > 0 ? out + peer * bytes : nullptr;
      },
      [](int, const MessageHeader&) { return Status::OK(); });
}

}  // namespace

StatusOr<std::unique_ptr<TcpTransportListener>> TcpTransportListener::Listen(
    const std::string& host) {
  StatusOr<net::Listener> listener = net::Listener::Listen(host, 0);
  if (!listener.ok()) return listener.status().WithContext("TCP transport listener");
  return std::unique_ptr<TcpTransportListener>(
      new TcpTransportListener(std::move(listener).value()));
}

StatusOr<std::unique_ptr<CollectiveTransport>> CreateTcpTransport(
    const TransportOptions& options, std::unique_ptr<TcpTransportListener> listener,
    const std::vector<std::string>& member_addresses) {
  return CreateTcpTransport(options, std::move(listener), member_addresses, TcpTransportTuning());
}

StatusOr<std::unique_ptr<CollectiveTransport>> CreateTcpTransport(
    const TransportOptions& options, std::unique_ptr<TcpTransportListener> listener,
    const std::vector<std::string>& member_addresses, const TcpTransportTuning& tuning) {
  WEFT_RETURN_IF_ERROR(internal::CheckOptions(options, "TCP"));
  if (listener == nullptr) {
    return InvalidArgument("TCP transport of group '", options.group_token, "': no listener");
  }
  if (static_cast<int>(member_addresses.size()) != options.world_size) {
    return InvalidArgument("TCP transport of group '", options.group_token,
                           "': ", member_addresses.size(), " member addresses for a group of ",
                           options.world_size);
  }
  if (tuning.chunk_bytes < 64) {
    return InvalidArgument("TCP transport of group '", options.group_token, "': chunk size ",
                           tuning.chunk_bytes, " is below 64 bytes");
  }
  const int abort_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (abort_fd < 0) {
    return Unavailable("TCP transport of group '", options.group_token,
                       "': eventfd: ", internal::ErrnoText(errno));
  }
  const Deadline deadline(options.timeout);
  auto fds = internal::ConnectMesh(options, listener->listener(), member_addresses, deadline);
  if (!fds.ok()) {
    ::close(abort_fd);
    return fds.status();
  }
  return std::unique_ptr<CollectiveTransport>(
      new TcpTransport(options, tuning, std::move(fds).value(), abort_fd));
}

}  // namespace weft
