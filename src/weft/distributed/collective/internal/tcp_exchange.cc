#include "weft/distributed/collective/internal/tcp_exchange.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "weft/core/metrics.h"
#include "weft/distributed/collective/internal/tcp_socket.h"

namespace weft::internal {
namespace {

// One receive call takes at most this much, so a long payload from one peer does not starve the
// sends to another.
constexpr size_t kMaxReceive = size_t{1} << 20;

}  // namespace

Exchange::~Exchange() {
  for (size_t peer = 0; peer < links_.size(); ++peer) {
    const Link& link = links_[peer];
    if (link.sent_bytes == 0 && link.received_bytes == 0) continue;
    metrics::RecordPeerBytes(MemberTask(options_, static_cast<int>(peer)), link.sent_bytes,
                             link.received_bytes);
  }
}

void Exchange::Send(int peer, const MessageHeader& header, const char* payload) {
  links_[peer].out.push_back(Outgoing{header, payload, 0});
}

Status Exchange::PumpSend(int peer, Link& link, bool* progress) {
  while (!link.out.empty()) {
    // Up to a few queued messages per call: the ring queues many small chunks.
    iovec parts[16];
    int count = 0;
    for (auto it = link.out.begin(); it != link.out.end() && count + 2 <= 16; ++it) {
      const size_t done = it == link.out.begin() ? it->done : 0;
      if (done < sizeof(MessageHeader)) {
        parts[count++] = {reinterpret_cast<char*>(&it->header) + done,
                          sizeof(MessageHeader) - done};
      }
      const size_t payload_done = done > sizeof(MessageHeader) ? done - sizeof(MessageHeader) : 0;
      if (it->header.payload_bytes > payload_done) {
        parts[count++] = {const_cast<char*>(it->payload) + payload_done,
                          it->header.payload_bytes - payload_done};
      }
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = count;
    const ssize_t sent = ::sendmsg(fds_[peer], &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::OK();
      return Unavailable(label_, ": sending to member ", MemberName(options_, peer), ": ",
                         ErrnoText(errno));
    }
    *progress = true;
    link.sent_bytes += sent;
    size_t left = static_cast<size_t>(sent);
    while (left > 0) {
      Outgoing& front = link.out.front();
      const size_t total = sizeof(MessageHeader) + front.header.payload_bytes;
      const size_t take = std::min(left, total - front.done);
      front.done += take;
      left -= take;
      if (front.done == total) link.out.pop_front();
    }
  }
  return Status::OK();
}

Status Exchange::PumpRecv(int peer, Link& link, const HeaderFn& on_header,
                          const MessageFn& on_message, bool* progress) {
  while (link.expected > 0) {
    const bool in_header = link.in_done < sizeof(MessageHeader);
    char* target;
    size_t want;
    if (in_header) {
      target = reinterpret_cast<char*>(&link.in) + link.in_done;
      want = sizeof(MessageHeader) - link.in_done;
    } else {
      const size_t payload_done = link.in_done - sizeof(MessageHeader);
      target = link.in_payload + payload_done;
      want = std::min(kMaxReceive, link.in.payload_bytes - payload_done);
    }
    if (want > 0) {
      const ssize_t got = ::recv(fds_[peer], target, want, MSG_DONTWAIT);
      if (got == 0) {
        return Unavailable(label_, ": member ", MemberName(options_, peer),
                           " closed the connection to member ", MemberName(options_, options_.rank),
                           " during the operation (it failed or exited)");
      }
      if (got < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::OK();
        return Unavailable(label_, ": receiving from member ", MemberName(options_, peer), ": ",
                           ErrnoText(errno));
      }
      *progress = true;
      link.received_bytes += got;
      link.in_done += static_cast<size_t>(got);
      if (static_cast<size_t>(got) < want) continue;
    }
    if (in_header) {
      if (link.in.magic != kMessageMagic || link.in.from_rank != peer) {
        return DataLoss(label_, ": garbage from member ", MemberName(options_, peer), " (magic ",
                        link.in.magic, ", sender rank ", link.in.from_rank, ")");
      }
      WEFT_ASSIGN_OR_RETURN(link.in_payload, on_header(peer, link.in));
      if (link.in.payload_bytes > 0 && link.in_payload == nullptr) {
        return DataLoss(label_, ": member ", MemberName(options_, peer), " sent ",
                        link.in.payload_bytes, " unexpected bytes");
      }
    }
    if (link.in_done < sizeof(MessageHeader) + link.in.payload_bytes) continue;
    link.in_done = 0;
    --link.expected;
    ++link.received;
    WEFT_RETURN_IF_ERROR(on_message(peer, link.in));
  }
  return Status::OK();
}

Status Exchange::Run(const HeaderFn& on_header, const MessageFn& on_message) {
  std::vector<pollfd> waiting;
  for (;;) {
    bool pending = false;
    bool progress = false;
    // Sends first, to every peer: the hellos then leave before any receive can fail the
    // operation, so every peer learns what this member called.
    for (size_t peer = 0; peer < links_.size(); ++peer) {
      if (links_[peer].out.empty()) continue;
      Status sent = PumpSend(peer, links_[peer], &progress);
      if (!sent.ok()) {
        links_[peer].broken = true;
        return Explain(std::move(sent), on_header, on_message);
      }
    }
    for (size_t peer = 0; peer < links_.size(); ++peer) {
      Link& link = links_[peer];
      if (link.expected == 0) continue;
      Status received = PumpRecv(peer, link, on_header, on_message, &progress);
      if (!received.ok()) {
        if (IsInvalidArgument(received)) return received;
        link.broken = true;
        return Explain(std::move(received), on_header, on_message);
      }
    }
    // After the whole pass: a message handled on one link may queue a send on another.
    for (const Link& link : links_) pending = pending || !link.out.empty() || link.expected > 0;
    if (!pending) return Status::OK();
    if (progress) continue;
    WEFT_RETURN_IF_ERROR(aborted_());
    waiting.clear();
    waiting.push_back({abort_fd_, POLLIN, 0});
    for (size_t peer = 0; peer < links_.size(); ++peer) {
      const Link& link = links_[peer];
      const short events =
          static_cast<short>((link.out.empty() ? 0 : POLLOUT) | (link.expected > 0 ? POLLIN : 0));
      if (events != 0) waiting.push_back({fds_[peer], events, 0});
    }
    if (deadline_.Expired()) return TimedOut();
    const int ready = ::poll(waiting.data(), waiting.size(), deadline_.PollMs(1000));
    if (ready < 0 && errno != EINTR) {
      return Internal(label_, ": poll: ", ErrnoText(errno));
    }
  }
}

Status Exchange::Explain(Status failure, const HeaderFn& on_header, const MessageFn& on_message) {
  // Long enough for a live peer's hello to cross loopback or a LAN, short against any timeout.
  constexpr int kGraceMs = 200;
  const Deadline grace{std::chrono::milliseconds(kGraceMs)};
  std::vector<pollfd> waiting;
  std::vector<size_t> peers;
  while (!grace.Expired()) {
    waiting.clear();
    peers.clear();
    for (size_t peer = 0; peer < links_.size(); ++peer) {
      if (links_[peer].broken || links_[peer].expected == 0) continue;
      waiting.push_back({fds_[peer], POLLIN, 0});
      peers.push_back(peer);
    }
    if (waiting.empty()) break;
    if (::poll(waiting.data(), waiting.size(), grace.PollMs(kGraceMs)) <= 0) break;
    for (size_t i = 0; i < waiting.size(); ++i) {
      if (waiting[i].revents == 0) continue;
      Link& link = links_[peers[i]];
      bool progress = false;
      Status received = PumpRecv(peers[i], link, on_header, on_message, &progress);
      if (IsInvalidArgument(received)) return received;
      if (!received.ok() || !progress) link.broken = true;
    }
  }
  return failure;
}

Status Exchange::TimedOut() const {
  std::string waiting;
  for (size_t peer = 0; peer < links_.size(); ++peer) {
    const Link& link = links_[peer];
    if (link.expected > 0) {
      waiting += StrCat(waiting.empty() ? "" : ", ", MemberName(options_, peer), " (",
                        link.received == 0 ? "sent nothing of this operation"
                                           : StrCat("stopped after ", link.received, " messages"),
                        ")");
    } else if (!link.out.empty()) {
      waiting += StrCat(waiting.empty() ? "" : ", ", MemberName(options_, peer),
                        " (not reading what this member sends)");
    }
  }
  return DeadlineExceeded(label_, ": members that did not arrive within ", options_.timeout.count(),
                          " ms (waiting: member ", MemberName(options_, options_.rank),
                          "): ", waiting);
}

}  // namespace weft::internal
