// Tells ThreadSanitizer about a hand-off between threads that it cannot see: one made by a library
// built without it (gRPC's completion queues in Debian's packages). The thread handing an object
// over calls HappensBefore(token) after its last write; the receiver calls HappensAfter(token)
// before its first read. Both compile to nothing outside ThreadSanitizer builds. Thread-safe.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define WEFT_TSAN_ENABLED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT_TSAN_ENABLED 1
#endif
#endif

#if defined(WEFT_TSAN_ENABLED)
extern "C" {
void __tsan_acquire(void* address);
void __tsan_release(void* address);
}
#endif

namespace weft::tsan {

inline void HappensBefore([[maybe_unused]] const void* token) {
#if defined(WEFT_TSAN_ENABLED)
  __tsan_release(const_cast<void*>(token));
#endif
}

inline void HappensAfter([[maybe_unused]] const void* token) {
#if defined(WEFT_TSAN_ENABLED)
  __tsan_acquire(const_cast<void*>(token));
#endif
}

}  // namespace weft::tsan
