#include "weft/distributed/collective/internal/shm_segment.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace weft::internal {
namespace {

constexpr uint64_t kShmMagic = 0x5745465453484d31ULL;  // "WEFTSHM1"
constexpr uint32_t kShmReady = 0x52454459;             // "REDY"
constexpr size_t kControlBytes = (sizeof(ShmControl) + 4095) / 4096 * 4096;

// Setup polls for peers' segments; they appear within milliseconds of each other normally.
void SleepBriefly(int attempt) {
  timespec pause{0, attempt < 20 ? 200'000L : 2'000'000L};
  nanosleep(&pause, nullptr);
}

std::string ErrnoText(int error) { return std::strerror(error); }

}  // namespace

std::string ShmSegmentName(const std::string& token, int rank) {
  // The token may hold any characters; keep a readable prefix and a hash for uniqueness.
  std::string name = "/weft-";
  for (char c : token) {
    if (name.size() >= 40) break;
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  }
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : token) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  char suffix[40];
  std::snprintf(suffix, sizeof(suffix), "-%016llx-%d", static_cast<unsigned long long>(hash), rank);
  return name + suffix;
}

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns) {
  timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000),
                   static_cast<long>(timeout_ns % 1'000'000'000)};
  // Not FUTEX_PRIVATE_FLAG: the word is in memory shared between processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

StatusOr<std::unique_ptr<ShmSegments>> ShmSegments::Create(const TransportOptions& options,
                                                           size_t slot_bytes) {
  std::unique_ptr<ShmSegments> segments(new ShmSegments());
  segments->slot_bytes_ = slot_bytes;
  segments->segment_bytes_ = kControlBytes + kShmSlots * slot_bytes;
  segments->bases_.assign(options.world_size, nullptr);
  segments->controls_.assign(options.world_size, nullptr);
  segments->data_.assign(options.world_size, nullptr);
  const Deadline deadline(options.timeout);
  // The destructor unlinks and unmaps whatever was made when any step fails.
  WEFT_RETURN_IF_ERROR(segments->CreateOwn(options));
  WEFT_RETURN_IF_ERROR(segments->MapPeers(options, deadline));
  WEFT_RETURN_IF_ERROR(segments->AwaitMappedAll(options, deadline));
  return segments;
}

ShmSegments::~ShmSegments() {
  if (own_linked_) shm_unlink(own_name_.c_str());
  for (void* base : bases_) {
    if (base != nullptr) munmap(base, segment_bytes_);
  }
}

Status ShmSegments::CreateOwn(const TransportOptions& options) {
  own_name_ = ShmSegmentName(options.group_token, options.rank);
  const std::string who =
      StrCat("shared-memory segment ", own_name_, " of member ", MemberName(options, options.rank));
  int fd = shm_open(own_name_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {
    // Left behind by a process of an earlier group with this token that died before unlinking.
    shm_unlink(own_name_.c_str());
    fd = shm_open(own_name_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  }
  if (fd < 0) return Unavailable("cannot create ", who, ": ", ErrnoText(errno));
  own_linked_ = true;
  // posix_fallocate reserves the pages now, so a full /dev/shm is this error and not a SIGBUS on
  // first touch in the middle of an operation.
  const int error = posix_fallocate(fd, 0, static_cast<off_t>(segment_bytes_));
  if (error != 0) {
    ::close(fd);
    return ResourceExhausted("cannot reserve ", segment_bytes_, " bytes for ", who,
                             " (is /dev/shm full?): ", ErrnoText(error));
  }
  void* base = mmap(nullptr, segment_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int map_error = errno;
  ::close(fd);
  if (base == MAP_FAILED) return Unavailable("cannot map ", who, ": ", ErrnoText(map_error));
  bases_[options.rank] = base;
  auto* control = new (base) ShmControl();
  control->magic = kShmMagic;
  control->rank = options.rank;
  control->world_size = options.world_size;
  control->pid = static_cast<int32_t>(getpid());
  control->slot_bytes = slot_bytes_;
  control->ready.store(kShmReady, std::memory_order_release);
  controls_[options.rank] = control;
  data_[options.rank] = static_cast<char*>(base) + kControlBytes;
  return Status::OK();
}

Status ShmSegments::MapPeers(const TransportOptions& options, const Deadline& deadline) {
  for (int attempt = 0;; ++attempt) {
    std::vector<int> missing;
    for (int peer = 0; peer < options.world_size; ++peer) {
      if (controls_[peer] != nullptr) continue;
      const std::string name = ShmSegmentName(options.group_token, peer);
      if (bases_[peer] == nullptr) {
        const int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
        struct stat info {};
        if (fd >= 0 && fstat(fd, &info) == 0 &&
            static_cast<size_t>(info.st_size) == segment_bytes_) {
          void* base = mmap(nullptr, segment_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
          if (base != MAP_FAILED) bases_[peer] = base;
        } else if (fd >= 0 && info.st_size > 0 &&
                   static_cast<size_t>(info.st_size) != segment_bytes_) {
          ::close(fd);
          return FailedPrecondition("shared-memory segment ", name, " of member ",
                                    MemberName(options, peer), " has ", info.st_size,
                                    " bytes; expected ", segment_bytes_,
                                    " (another build, or another group with the same token?)");
        }
        if (fd >= 0) ::close(fd);
      }
      if (bases_[peer] != nullptr) {
        auto* control = static_cast<ShmControl*>(bases_[peer]);
        if (control->ready.load(std::memory_order_acquire) == kShmReady) {
          if (control->magic != kShmMagic || control->rank != peer ||
              control->world_size != options.world_size) {
            return FailedPrecondition("shared-memory segment ", name, " of member ",
                                      MemberName(options, peer), " belongs to rank ", control->rank,
                                      " of a group of ", control->world_size);
          }
          controls_[peer] = control;
          data_[peer] = static_cast<char*>(bases_[peer]) + kControlBytes;
          continue;
        }
      }
      missing.push_back(peer);
    }
    if (missing.empty()) return Status::OK();
    if (deadline.Expired()) {
      std::string names;
      for (int peer : missing)
        names += StrCat(names.empty() ? "" : ", ", MemberName(options, peer));
      return DeadlineExceeded("shared-memory transport of group '", options.group_token,
                              "': members that never appeared within ", options.timeout.count(),
                              " ms: ", names);
    }
    SleepBriefly(attempt);
  }
}

Status ShmSegments::AwaitMappedAll(const TransportOptions& options, const Deadline& deadline) {
  controls_[options.rank]->mapped_all.store(1, std::memory_order_release);
  for (int attempt = 0;; ++attempt) {
    std::string missing;
    for (int peer = 0; peer < options.world_size; ++peer) {
      if (controls_[peer]->mapped_all.load(std::memory_order_acquire) == 0) {
        missing += StrCat(missing.empty() ? "" : ", ", MemberName(options, peer));
      }
    }
    if (missing.empty()) break;
    if (deadline.Expired()) {
      return DeadlineExceeded("shared-memory transport of group '", options.group_token,
                              "': members that did not map the group's segments within ",
                              options.timeout.count(), " ms: ", missing);
    }
    SleepBriefly(attempt);
  }
  // Every member holds a mapping now: the name is no longer needed, and unlinking it here means
  // nothing is left in /dev/shm however the processes end later.
  shm_unlink(own_name_.c_str());
  own_linked_ = false;
  return Status::OK();
}

}  // namespace weft::internal
