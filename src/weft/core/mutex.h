// Mutex and MutexLock with clang thread-safety annotations (no-ops under gcc), so that clang builds
// can check GUARDED_BY/REQUIRES. Same semantics as std::mutex / std::lock_guard.
#pragma once

#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define WEFT_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define WEFT_THREAD_ANNOTATION(x)
#endif
#define WEFT_CAPABILITY(x) WEFT_THREAD_ANNOTATION(capability(x))
#define WEFT_SCOPED_CAPABILITY WEFT_THREAD_ANNOTATION(scoped_lockable)
#define WEFT_GUARDED_BY(x) WEFT_THREAD_ANNOTATION(guarded_by(x))
#define WEFT_REQUIRES(...) WEFT_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define WEFT_ACQUIRE(...) WEFT_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define WEFT_RELEASE(...) WEFT_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define WEFT_EXCLUDES(...) WEFT_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

namespace weft {

class WEFT_CAPABILITY("mutex") Mutex {
 public:
  void Lock() WEFT_ACQUIRE() { mu_.lock(); }
  void Unlock() WEFT_RELEASE() { mu_.unlock(); }
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

class WEFT_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) WEFT_ACQUIRE(mu) : lock_(mu.native()) {}
  ~MutexLock() WEFT_RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  // For waiting on a std::condition_variable while holding this lock.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace weft
