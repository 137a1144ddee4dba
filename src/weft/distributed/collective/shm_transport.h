// The shared-memory CollectiveTransport: for members that are processes of one host. Each member
// owns a POSIX shared-memory segment (control atomics plus two data slots) and maps its peers';
// large tensors go through the slots in double-buffered chunks (each member reduces one slice of
// a chunk, summing members in rank order), small ones in one exchange. Waiting spins briefly and
// then sleeps on a futex in the segment, so an oversubscribed host stays correct and idle.
// Thread-safety: as CollectiveTransport (one caller at a time; StartAbort from any thread).
#pragma once

#include <cstddef>
#include <memory>

#include "weft/core/statusor.h"
#include "weft/distributed/collective/collective_transport.h"

namespace weft {

struct ShmTransportTuning {
  // Bytes per data slot; a member's segment holds two. Tensors larger than a slot go in chunks.
  size_t slot_bytes = size_t{4} << 20;
  // All-reduces of at most this many bytes (and at most a slot) take the one-exchange path:
  // every member posts its whole input and sums all of them (at 256 KB over 2 processes about
  // 11 us against 30 us for the chunked path's two synchronisations).
  size_t small_bytes = size_t{256} << 10;
  // Processes on this host that may wait at once, when more than this group's members (as when
  // several groups share the host, or the hierarchical transport's "hosts" are one machine); 0
  // means the group's size. A waiter spins only when each of them has a core.
  int host_processes = 0;
};

// Creates this member's segment, maps every peer's (waiting up to options.timeout for them:
// DeadlineExceeded naming those that never appeared) and unlinks the segments once all are
// mapped. ResourceExhausted when /dev/shm cannot hold the segment.
StatusOr<std::unique_ptr<CollectiveTransport>> CreateShmTransport(const TransportOptions& options);
StatusOr<std::unique_ptr<CollectiveTransport>> CreateShmTransport(const TransportOptions& options,
                                                                  const ShmTransportTuning& tuning);

}  // namespace weft
