// Exchange: moves the messages of one TCP collective operation. Each message is a fixed header
// (magic, sender, phase, index, payload size, the operation's identity) and a payload; a caller
// queues messages per peer and says how many it expects from each, and Run drives every socket
// without blocking on any one of them (so no two members can wait on each other's sends), handing
// each header to the caller (which checks it and says where the payload goes) and each finished
// message back (which may queue more). One Exchange per operation, on the operation's thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/distributed/collective/collective_transport.h"
#include "weft/distributed/collective/internal/transport_util.h"

namespace weft::internal {

constexpr uint32_t kMessageMagic = 0x57454654;  // "WEFT"
enum MessagePhase : uint32_t { kHello = 1, kRing = 2 };

struct MessageHeader {
  uint32_t magic = kMessageMagic;
  int32_t from_rank = 0;
  uint32_t phase = 0;
  uint32_t index = 0;  // position in the sender's sequence of this phase to this peer
  uint64_t payload_bytes = 0;
  OpIdentity identity;
};
static_assert(sizeof(MessageHeader) == 80);

class Exchange {
 public:
  // Returns where the payload of a message with this (magic- and sender-checked) header goes;
  // nullptr only when it has none.
  using HeaderFn = std::function<StatusOr<char*>(int peer, const MessageHeader& header)>;
  // Called once a message's payload is in place.
  using MessageFn = std::function<Status(int peer, const MessageHeader& header)>;
  // Returns the abort status when the transport is being aborted, else OK.
  using AbortFn = std::function<Status()>;

  // `fds` by rank (-1 at this member); `abort_fd` becomes readable on StartAbort.
  Exchange(const TransportOptions& options, const std::vector<int>& fds, int abort_fd,
           const std::string& label, const Deadline& deadline, AbortFn aborted)
      : options_(options),
        fds_(fds),
        abort_fd_(abort_fd),
        label_(label),
        deadline_(deadline),
        aborted_(std::move(aborted)),
        links_(fds.size()) {}
  // Adds what moved over each link to the process's bytes per peer (core/metrics.h).
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // Queues a message; `payload` must stay valid and unchanged until Run returns.
  void Send(int peer, const MessageHeader& header, const char* payload);
  void Expect(int peer, int messages) { links_[peer].expected += messages; }
  Status Run(const HeaderFn& on_header, const MessageFn& on_message);

 private:
  struct Outgoing {
    MessageHeader header;
    const char* payload;
    size_t done = 0;  // bytes of header + payload sent
  };
  struct Link {
    std::deque<Outgoing> out;
    int expected = 0;  // messages still to receive
    int received = 0;
    MessageHeader in;
    size_t in_done = 0;  // bytes of the current message received (header, then payload)
    char* in_payload = nullptr;
    bool broken = false;     // failed: neither sent to nor read from again
    int64_t sent_bytes = 0;  // headers and payloads, what the socket took
    int64_t received_bytes = 0;
  };
  Status PumpSend(int peer, Link& link, bool* progress);
  Status PumpRecv(int peer, Link& link, const HeaderFn& on_header, const MessageFn& on_message,
                  bool* progress);
  Status TimedOut() const;
  // `failure` (a link broke: the peer closed or reset it) may be a consequence: the peer saw a
  // mismatch and quit, and a hello that says so may already be waiting on some link. Reads what
  // arrives within a short grace period and returns a mismatch (InvalidArgument) found there,
  // else `failure`.
  Status Explain(Status failure, const HeaderFn& on_header, const MessageFn& on_message);

  const TransportOptions& options_;
  const std::vector<int>& fds_;
  const int abort_fd_;
  const std::string& label_;
  const Deadline& deadline_;
  const AbortFn aborted_;
  std::vector<Link> links_;
};

}  // namespace weft::internal
