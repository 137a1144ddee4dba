// ShmTransport (see the header). Protocol: every operation uses a run of epochs, numbered alike on
// every member; epoch e's data sits in slot e % 2 of the writer's segment. A member writes its slot
// for epoch e only once every peer has `consumed` epoch e - 2 (double buffering: copying chunk k+1
// in overlaps peers still reading chunk k), then publishes `copied`. The first epoch of an
// operation also posts the operation's identity, checked by every member before any data is read.
#include "weft/distributed/collective/shm_transport.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include <signal.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "weft/distributed/collective/internal/shm_segment.h"
#include "weft/distributed/collective/internal/transport_skeleton.h"
#include "weft/distributed/collective/internal/transport_util.h"

namespace weft {
namespace {

using internal::Deadline;
using internal::FlatAllReduce;
using internal::OpIdentity;
using internal::ShmControl;
using internal::ShmSegments;

// A sleeping waiter wakes at least this often to look for peers that exited without a word.
constexpr std::chrono::milliseconds kSleepSlice{50};

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

class ShmTransport final : public internal::TransportSkeleton {
 public:
  ShmTransport(const TransportOptions& options, const ShmTransportTuning& tuning,
               std::unique_ptr<ShmSegments> segments)
      : TransportSkeleton(options),
        tuning_(tuning),
        segments_(std::move(segments)),
        mine_(segments_->control(options.rank)) {
    // Spinning only pays when every member has a core; oversubscribed, it steals the core the
    // awaited peer needs, so go to sleep almost at once.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const int waiters = std::max(options.world_size, tuning.host_processes);
    spin_limit_ = static_cast<unsigned>(waiters) <= cores ? 20000 : 64;
  }

 private:
  Status RunAllReduce(const std::string& label, const FlatAllReduce& flat,
                      const Deadline& deadline) override;
  Status RunBroadcast(const std::string& label, const OpIdentity& identity, int root, Tensor* value,
                      const Deadline& deadline) override;
  Status RunAllGather(const std::string& label, const OpIdentity& identity, const Tensor& input,
                      Tensor* output, const Deadline& deadline) override;

  void WakeBlockedCall() override {
    // Wakes this member's blocked call, which tells the peers.
    mine_->doorbell.fetch_add(1);
    internal::FutexWakeAll(&mine_->doorbell);
  }

  ShmControl* control(int rank) const { return segments_->control(rank); }
  char* slot(int rank, uint64_t epoch) const { return segments_->slot(rank, epoch); }
  // Poisons the transport with `status` (unless it already is) and tells the peers.
  Status Fail(const Status& status) override;
  void PublishFailure(const Status& status);

  // Waits until ready(peer) holds for every peer, spinning briefly and then sleeping on this
  // member's doorbell. Fails on abort, on the deadline, or when an awaited peer failed or exited.
  template <typename Ready>
  Status WaitPeers(const Ready& ready, std::string_view phase, const std::string& label,
                   const Deadline& deadline);
  template <typename Ready>
  Status CheckWaiting(const Ready& ready, std::string_view phase, const std::string& label,
                      const Deadline& deadline, bool slept_full_slice);
  std::string LastCompleted() const;

  // Stores `value` and wakes the peers that sleep.
  void Publish(std::atomic<uint64_t>& counter, uint64_t value) {
    counter.store(value);
    RingPeers(false);
  }
  void RingPeers(bool all);

  // Waits until this member may write its slot for `epoch`.
  Status AwaitSlot(uint64_t epoch, const std::string& label, const Deadline& deadline) {
    return WaitPeers([&](int p) { return control(p)->consumed.load() + 2 >= epoch; },
                     "the release of a data slot", label, deadline);
  }
  Status AwaitCopied(uint64_t epoch, const std::string& label, const Deadline& deadline,
                     int only = -1) {
    return WaitPeers(
        [&](int p) { return (only >= 0 && p != only) || control(p)->copied.load() >= epoch; },
        "a data chunk", label, deadline);
  }
  // Posts the operation's identity (after its first epoch's data) and checks every peer's.
  Status PostAndCheck(const OpIdentity& identity, const std::string& label,
                      const Deadline& deadline);
  void Complete(const OpIdentity& identity, uint64_t epochs) {
    mine_->last_instance_key.store(identity.instance_key);
    mine_->last_sequence.store(identity.sequence);
    ++ops_;
    epoch_ += epochs;
  }

  Status AllReduceSmall(const FlatAllReduce& flat, const std::string& label,
                        const Deadline& deadline);
  Status AllReduceChunked(const FlatAllReduce& flat, const std::string& label,
                          const Deadline& deadline);

  const ShmTransportTuning tuning_;
  const std::unique_ptr<ShmSegments> segments_;
  ShmControl* const mine_;
  unsigned spin_limit_ = 0;
  // Touched only by the one calling thread.
  uint64_t ops_ = 0;    // operations completed
  uint64_t epoch_ = 0;  // the last epoch used
  bool failure_published_ = false;
};

Status ShmTransport::Fail(const Status& status) {
  Status first = poison_.Poison(status);
  PublishFailure(first);
  return first;
}

void ShmTransport::PublishFailure(const Status& status) {
  if (failure_published_) return;
  failure_published_ = true;
  const std::string text = status.ToString();
  const size_t length = std::min(text.size(), sizeof(mine_->failure) - 1);
  std::memcpy(mine_->failure, text.data(), length);
  mine_->failure[length] = '\0';
  mine_->failed.store(1);
  RingPeers(true);
}

void ShmTransport::RingPeers(bool all) {
  for (int p = 0; p < options_.world_size; ++p) {
    if (p == options_.rank) continue;
    ShmControl* peer = control(p);
    // Pairs with the waiter's store of `sleeping` before its last look at the counters: both are
    // sequentially consistent, so either the waiter sees the new value or this sees it sleeping.
    if (all || peer->sleeping.load() != 0) {
      peer->doorbell.fetch_add(1);
      internal::FutexWakeAll(&peer->doorbell);
    }
  }
}

template <typename Ready>
Status ShmTransport::WaitPeers(const Ready& ready, std::string_view phase, const std::string& label,
                               const Deadline& deadline) {
  auto all_ready = [&] {
    for (int p = 0; p < options_.world_size; ++p) {
      if (p != options_.rank && !ready(p)) return false;
    }
    return true;
  };
  for (unsigned i = 0; i < spin_limit_; ++i) {
    if (all_ready()) return Status::OK();
    CpuRelax();
  }
  bool slept_full_slice = false;
  for (;;) {
    if (all_ready()) return Status::OK();
    const uint32_t bell = mine_->doorbell.load();
    WEFT_RETURN_IF_ERROR(CheckWaiting(ready, phase, label, deadline, slept_full_slice));
    mine_->sleeping.store(1);
    if (all_ready()) {
      mine_->sleeping.store(0);
      return Status::OK();
    }
    const auto slice = std::min<std::chrono::nanoseconds>(deadline.Remaining(), kSleepSlice);
    internal::FutexWait(&mine_->doorbell, bell, std::max<int64_t>(slice.count(), 1));
    mine_->sleeping.store(0);
    slept_full_slice = mine_->doorbell.load() == bell;
  }
}

template <typename Ready>
Status ShmTransport::CheckWaiting(const Ready& ready, std::string_view phase,
                                  const std::string& label, const Deadline& deadline,
                                  bool slept_full_slice) {
  if (poison_.aborting()) return poison_.status();
  std::string missing;
  for (int p = 0; p < options_.world_size; ++p) {
    if (p == options_.rank || ready(p)) continue;
    ShmControl* peer = control(p);
    if (peer->failed.load() != 0) {
      return Aborted(label, ": member ", Name(p), " failed while member ", Name(options_.rank),
                     " waited for it at ", phase, ": ",
                     std::string(peer->failure, strnlen(peer->failure, sizeof(peer->failure))));
    }
    // A peer that exited without a word (killed, crashed) cannot publish a failure.
    if (slept_full_slice && kill(peer->pid, 0) != 0 && errno == ESRCH) {
      return Unavailable(label, ": member ", Name(p), " (pid ", peer->pid, ") exited while member ",
                         Name(options_.rank), " waited for it at ", phase);
    }
    missing += StrCat(missing.empty() ? "" : ", ", Name(p));
  }
  if (deadline.Expired()) {
    return DeadlineExceeded(label, ": members that did not arrive at ", phase, " within ",
                            options_.timeout.count(), " ms (waiting: member ", Name(options_.rank),
                            "): ", missing, "; last operations completed: ", LastCompleted());
  }
  return Status::OK();
}

std::string ShmTransport::LastCompleted() const {
  std::string text;
  for (int p = 0; p < options_.world_size; ++p) {
    const int64_t key = control(p)->last_instance_key.load();
    text += StrCat(
        p == 0 ? "" : "; ", Name(p), ": ",
        key < 0 ? std::string("none")
                : StrCat("instance_key ", key, " sequence ", control(p)->last_sequence.load()));
  }
  return text;
}

Status ShmTransport::PostAndCheck(const OpIdentity& identity, const std::string& label,
                                  const Deadline& deadline) {
  mine_->posted[ops_ % 2] = identity;
  Publish(mine_->ops_posted, ops_ + 1);
  WEFT_RETURN_IF_ERROR(WaitPeers([&](int p) { return control(p)->ops_posted.load() > ops_; },
                                 "the start of the operation", label, deadline));
  for (int p = 0; p < options_.world_size; ++p) {
    if (p == options_.rank) continue;
    // A peer rewrites this entry only after it starts operation ops_ + 2, which needs this
    // member's post of ops_ + 1: the copy is stable.
    OpIdentity theirs;
    std::memcpy(&theirs, &control(p)->posted[ops_ % 2], sizeof(theirs));
    WEFT_RETURN_IF_ERROR(
        internal::CheckSameOp(options_, label, options_.rank, identity, p, theirs));
  }
  return Status::OK();
}

Status ShmTransport::RunAllReduce(const std::string& label, const FlatAllReduce& flat,
                                  const Deadline& deadline) {
  const size_t bytes = flat.identity.num_elements * flat.element_size;
  const bool small = bytes <= std::min(tuning_.small_bytes, segments_->slot_bytes());
  return small ? AllReduceSmall(flat, label, deadline) : AllReduceChunked(flat, label, deadline);
}

// One exchange: every member posts its whole input, then sums all of them in rank order.
Status ShmTransport::AllReduceSmall(const FlatAllReduce& flat, const std::string& label,
                                    const Deadline& deadline) {
  const uint64_t epoch = epoch_ + 1;
  const size_t bytes = flat.identity.num_elements * flat.element_size;
  WEFT_RETURN_IF_ERROR(AwaitSlot(epoch, label, deadline));
  if (bytes > 0) std::memcpy(slot(options_.rank, epoch), flat.input, bytes);
  mine_->copied.store(epoch);
  WEFT_RETURN_IF_ERROR(PostAndCheck(flat.identity, label, deadline));
  std::vector<const char*> sources(options_.world_size);
  for (int m = 0; m < options_.world_size; ++m) {
    sources[m] = m == options_.rank ? flat.input : slot(m, epoch);
  }
  const auto dtype = static_cast<DataType>(flat.identity.dtype);
  internal::SumInOrder(dtype, sources, flat.output, flat.identity.num_elements,
                       std::bit_cast<double>(flat.identity.param));
  Publish(mine_->consumed, epoch);
  Complete(flat.identity, 1);
  return Status::OK();
}

// Per chunk: each member copies in the slices its peers reduce, member p sums slice p over all
// members (rank order) into its own slot, and every member gathers the reduced slices.
Status ShmTransport::AllReduceChunked(const FlatAllReduce& flat, const std::string& label,
                                      const Deadline& deadline) {
  const int n = options_.world_size;
  const int me = options_.rank;
  const size_t es = flat.element_size;
  const auto dtype = static_cast<DataType>(flat.identity.dtype);
  const double divisor = std::bit_cast<double>(flat.identity.param);
  const int64_t total = flat.identity.num_elements;
  const int64_t chunk = static_cast<int64_t>(segments_->slot_bytes() / 64 * 64 / es);
  const int64_t chunks = (total + chunk - 1) / chunk;
  std::vector<const char*> sources(n);
  for (int64_t k = 0; k < chunks; ++k) {
    const uint64_t epoch = epoch_ + 1 + k;
    const int64_t first = k * chunk;
    const int64_t length = std::min(chunk, total - first);
    const char* in = flat.input + first * es;
    char* out = flat.output + first * es;
    char* own_slot = slot(me, epoch);
    const auto [begin, end] = internal::SliceRange(length, me, n, es);
    // Copy in everything but this member's own slice: only peers read this slot's input.
    WEFT_RETURN_IF_ERROR(AwaitSlot(epoch, label, deadline));
    if (begin > 0) std::memcpy(own_slot, in, begin * es);
    if (end < length) std::memcpy(own_slot + end * es, in + end * es, (length - end) * es);
    if (k == 0) {
      mine_->copied.store(epoch);
      WEFT_RETURN_IF_ERROR(PostAndCheck(flat.identity, label, deadline));
    } else {
      Publish(mine_->copied, epoch);
      WEFT_RETURN_IF_ERROR(AwaitCopied(epoch, label, deadline));
    }
    if (end > begin) {
      for (int m = 0; m < n; ++m) sources[m] = (m == me ? in : slot(m, epoch)) + begin * es;
      internal::SumInOrder(dtype, sources, own_slot + begin * es, end - begin, divisor);
      std::memcpy(out + begin * es, own_slot + begin * es, (end - begin) * es);
    }
    Publish(mine_->reduced, epoch);
    WEFT_RETURN_IF_ERROR(WaitPeers([&](int p) { return control(p)->reduced.load() >= epoch; },
                                   "a reduced slice", label, deadline));
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      const auto [qb, qe] = internal::SliceRange(length, q, n, es);
      if (qe > qb) std::memcpy(out + qb * es, slot(q, epoch) + qb * es, (qe - qb) * es);
    }
    Publish(mine_->consumed, epoch);
  }
  Complete(flat.identity, static_cast<uint64_t>(chunks));
  return Status::OK();
}

Status ShmTransport::RunBroadcast(const std::string& label, const OpIdentity& identity, int root,
                                  Tensor* value, const Deadline& deadline) {
  const int64_t bytes = static_cast<int64_t>(value->TotalBytes());
  const int64_t chunk = static_cast<int64_t>(segments_->slot_bytes());
  const int64_t chunks = std::max<int64_t>(1, (bytes + chunk - 1) / chunk);
  char* data = static_cast<char*>(value->raw_data());
  const bool is_root = options_.rank == root;
  Status status;
  for (int64_t k = 0; k < chunks && status.ok(); ++k) {
    const uint64_t epoch = epoch_ + 1 + k;
    const int64_t first = k * chunk;
    const int64_t length = std::min(chunk, bytes - first);
    if (is_root) {
      status = AwaitSlot(epoch, label, deadline);
      if (!status.ok()) break;
      if (length > 0) std::memcpy(slot(root, epoch), data + first, length);
      mine_->copied.store(epoch);
    }
    if (k == 0) {
      status = PostAndCheck(identity, label, deadline);
    } else if (is_root) {
      RingPeers(false);
    }
    if (status.ok() && !is_root) {
      status = AwaitCopied(epoch, label, deadline, root);
      if (status.ok() && length > 0) std::memcpy(data + first, slot(root, epoch), length);
    }
    if (status.ok()) Publish(mine_->consumed, epoch);
  }
  if (!status.ok()) return status;
  Complete(identity, static_cast<uint64_t>(chunks));
  return Status::OK();
}

Status ShmTransport::RunAllGather(const std::string& label, const OpIdentity& identity,
                                  const Tensor& input, Tensor* output, const Deadline& deadline) {
  const int64_t bytes = static_cast<int64_t>(input.TotalBytes());
  const int64_t chunk = static_cast<int64_t>(segments_->slot_bytes());
  const int64_t chunks = std::max<int64_t>(1, (bytes + chunk - 1) / chunk);
  const char* in = static_cast<const char*>(input.raw_data());
  char* out = static_cast<char*>(output->raw_data());
  Status status;
  for (int64_t k = 0; k < chunks && status.ok(); ++k) {
    const uint64_t epoch = epoch_ + 1 + k;
    const int64_t first = k * chunk;
    const int64_t length = std::min(chunk, bytes - first);
    status = AwaitSlot(epoch, label, deadline);
    if (!status.ok()) break;
    if (length > 0) std::memcpy(slot(options_.rank, epoch), in + first, length);
    if (k == 0) {
      mine_->copied.store(epoch);
      status = PostAndCheck(identity, label, deadline);
    } else {
      Publish(mine_->copied, epoch);
      status = AwaitCopied(epoch, label, deadline);
    }
    if (!status.ok()) break;
    for (int q = 0; q < options_.world_size && length > 0; ++q) {
      const char* from = q == options_.rank ? in + first : slot(q, epoch);
      std::memcpy(out + q * bytes + first, from, length);
    }
    Publish(mine_->consumed, epoch);
  }
  if (!status.ok()) return status;
  Complete(identity, static_cast<uint64_t>(chunks));
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<CollectiveTransport>> CreateShmTransport(const TransportOptions& options) {
  return CreateShmTransport(options, ShmTransportTuning());
}

StatusOr<std::unique_ptr<CollectiveTransport>> CreateShmTransport(
    const TransportOptions& options, const ShmTransportTuning& tuning) {
  WEFT_RETURN_IF_ERROR(internal::CheckOptions(options, "shared-memory"));
  if (tuning.slot_bytes < 4096 || tuning.slot_bytes % 64 != 0) {
    return InvalidArgument("shared-memory transport of group '", options.group_token,
                           "': slot size ", tuning.slot_bytes,
                           " must be a multiple of 64 of at least 4096");
  }
  WEFT_ASSIGN_OR_RETURN(auto segments, internal::ShmSegments::Create(options, tuning.slot_bytes));
  return std::unique_ptr<CollectiveTransport>(
      new ShmTransport(options, tuning, std::move(segments)));
}

}  // namespace weft
