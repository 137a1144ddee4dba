// What every kernel that calls oneDNN needs: the CPU engine, and the calling thread set to run
// oneDNN single-threaded. oneDNN (Debian's build) sizes its parallel regions by the calling
// thread's OpenMP thread count; Weft splits work over its own intra-op threads instead, so each
// call stays on the thread that makes it and never starts OpenMP threads. Thread-safe.
#pragma once

namespace dnnl {
struct engine;
}  // namespace dnnl

namespace weft::kernels {

// Sets this thread's OpenMP thread count to 1 (once per thread; cheap after the first call).
void UseOneOpenMpThread();

// The process's oneDNN CPU engine, created on first use.
dnnl::engine& OneDnnCpuEngine();

}  // namespace weft::kernels
