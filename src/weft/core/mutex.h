// Mutex, MutexLock and CondVar: the only locking primitives of the library. They carry clang's
// thread-safety annotations, so the clang build (-Wthread-safety -Werror) checks every
// WEFT_GUARDED_BY member and WEFT_REQUIRES function; under gcc the annotations compile to nothing.
// A CondVar waits on a MutexLock: there is no way to reach the native handle and lock around it.
#pragma once

#include <chrono>
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

class CondVar;

class WEFT_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() WEFT_ACQUIRE() { mu_.lock(); }
  void Unlock() WEFT_RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its lifetime; Unlock()/Lock() let a scope drop the lock around a call (a
// callback, a blocking send) and take it back. The destructor releases only a held lock.
class WEFT_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) WEFT_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() WEFT_RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() WEFT_RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() WEFT_ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }

 private:
  friend class CondVar;
  Mutex& mu_;
  bool held_ = true;
};

// Waits release the lock while blocked and hold it again on return. Spurious wake-ups happen:
// callers loop on their condition (`while (!ready_) cv_.Wait(lock);`), which keeps the guarded
// reads visible to the analysis (a predicate lambda would hide them).
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(MutexLock& lock) {
    std::unique_lock<std::mutex> native(lock.mu_.mu_, std::adopt_lock);
    cv_.wait(native);
    native.release();
  }
  // Returns false when `deadline` passed before a notification (the lock is held either way).
  bool WaitUntil(MutexLock& lock, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> native(lock.mu_.mu_, std::adopt_lock);
    const bool notified = cv_.wait_until(native, deadline) == std::cv_status::no_timeout;
    native.release();
    return notified;
  }
  template <typename Rep, typename Period>
  bool WaitFor(MutexLock& lock, std::chrono::duration<Rep, Period> timeout) {
    return WaitUntil(lock, std::chrono::steady_clock::now() +
                               std::chrono::duration_cast<std::chrono::nanoseconds>(timeout));
  }

  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace weft
