// The shared-memory segments of one group on one host: each member creates its own segment (a
// control block of atomics plus a data area of two slots) and maps every peer's. Segments are
// unlinked as soon as every member has mapped them, and on every failure path, so /dev/shm keeps
// nothing once a group is connected. Also the futex helpers used to sleep on a word in a segment.
// ShmSegments is not synchronised; the atomics in the control blocks are what members share.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/distributed/collective/collective_transport.h"
#include "weft/distributed/collective/internal/transport_util.h"

namespace weft::internal {

constexpr int kShmSlots = 2;

// One member's control block, written only by its owner except `doorbell` (rung by anyone).
// Counters are epochs: an operation uses one or more numbered epochs, the same on every member,
// and slot (epoch % kShmSlots) holds that epoch's data.
struct ShmControl {
  // Written once, before `ready`.
  uint64_t magic = 0;
  int32_t rank = 0;
  int32_t world_size = 0;
  int32_t pid = 0;
  int32_t reserved = 0;
  uint64_t slot_bytes = 0;
  std::atomic<uint32_t> ready{0};       // kShmReady once the fields above are set
  std::atomic<uint32_t> mapped_all{0};  // 1 once the owner has mapped every peer

  alignas(64) std::atomic<uint64_t> ops_posted{0};  // headers of operations [0, ops_posted)
  alignas(64) std::atomic<uint64_t> copied{0};      // the owner's slot holds input up to here
  alignas(64) std::atomic<uint64_t> reduced{0};     // its reduced slice is in its slot
  alignas(64) std::atomic<uint64_t> consumed{0};    // it no longer reads peers' slots of these
  alignas(64) std::atomic<uint32_t> doorbell{0};    // futex word the owner sleeps on
  std::atomic<uint32_t> sleeping{0};                // 1 while the owner may sleep on it
  alignas(64) std::atomic<uint32_t> failed{0};      // 1 once `failure` holds why
  char failure[480] = {};
  alignas(64) OpIdentity posted[2];            // operation k's identity at posted[k % 2]
  std::atomic<int64_t> last_instance_key{-1};  // the last operation completed, for diagnosis
  std::atomic<int64_t> last_sequence{-1};
};

class ShmSegments {
 public:
  // Creates this member's segment with `slot_bytes` per slot, maps every peer's (waiting for them
  // up to options.timeout) and unlinks this member's once every member has mapped it.
  static StatusOr<std::unique_ptr<ShmSegments>> Create(const TransportOptions& options,
                                                       size_t slot_bytes);
  ~ShmSegments();
  ShmSegments(const ShmSegments&) = delete;
  ShmSegments& operator=(const ShmSegments&) = delete;

  ShmControl* control(int rank) const { return controls_[rank]; }
  char* slot(int rank, uint64_t epoch) const {
    return data_[rank] + (epoch % kShmSlots) * slot_bytes_;
  }
  size_t slot_bytes() const { return slot_bytes_; }

 private:
  ShmSegments() = default;
  Status CreateOwn(const TransportOptions& options);
  Status MapPeers(const TransportOptions& options, const Deadline& deadline);
  Status AwaitMappedAll(const TransportOptions& options, const Deadline& deadline);

  size_t slot_bytes_ = 0;
  size_t segment_bytes_ = 0;
  std::string own_name_;
  bool own_linked_ = false;  // still to unlink
  std::vector<void*> bases_;
  std::vector<ShmControl*> controls_;
  std::vector<char*> data_;
};

// The segment name of `rank` in the group `token` (a portable shm_open name).
std::string ShmSegmentName(const std::string& token, int rank);

// Sleeps while *word == expected, at most `timeout_ns`; works across processes.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns);
void FutexWakeAll(std::atomic<uint32_t>* word);

}  // namespace weft::internal
