// Gemm: row-major C = alpha * op(A) * op(B) + beta * C, float through oneDNN's sgemm (its AVX-512
// kernels measured 1.0-2.1x OpenBLAS's on every W1/W2 shape, bench/run.sh matmul), double through
// OpenBLAS's dgemm. m, n and k may be 0; double's must fit BLAS's 32-bit int (kernels check with
// FitsBlasInt first and fail naming their node).
// float Gemm runs on the calling thread; double Gemm on OpenBLAS's own threads (if it has any) and
// must then be called from one thread at a time. ParallelGemm splits C into blocks computed on the
// kernel's intra-op threads when the library is single-threaded, which is how the runtime
// configures OpenBLAS (see cpu_device.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <initializer_list>

#include <cblas.h>

#include "weft/core/logging.h"
#include "weft/core/notification.h"
#include "weft/core/thread_pool.h"
#include "weft/kernels/eigen_support.h"

namespace weft::kernels {

struct GemmDims {
  int64_t m = 0;  // rows of op(A) and C
  int64_t n = 0;  // columns of op(B) and C
  int64_t k = 0;  // columns of op(A), rows of op(B)
  bool transpose_a = false;
  bool transpose_b = false;
};

// True when every one of `values` (dimensions, leading dimensions) fits BLAS's 32-bit int.
inline bool FitsBlasInt(std::initializer_list<int64_t> values) {
  return std::all_of(values.begin(), values.end(),
                     [](int64_t v) { return v >= 0 && v <= INT_MAX; });
}

namespace internal {
inline blasint BlasInt(int64_t v) {
  WEFT_CHECK(v >= 0 && v <= INT_MAX) << "GEMM dimension " << v << " does not fit BLAS's int";
  return static_cast<blasint>(v);
}
inline CBLAS_TRANSPOSE BlasTranspose(bool transpose) {
  return transpose ? CblasTrans : CblasNoTrans;
}

// C = beta * C, for k == 0 where BLAS implementations differ in what they accept.
template <typename T>
void ScaleMatrix(const GemmDims& d, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < d.m; ++i) {
    for (int64_t j = 0; j < d.n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
  }
}
}  // namespace internal

// Leading dimensions are those of the row-major matrices as stored (before op()).
void Gemm(const GemmDims& d, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
          float beta, float* c, int64_t ldc);

inline void Gemm(const GemmDims& d, double alpha, const double* a, int64_t lda, const double* b,
                 int64_t ldb, double beta, double* c, int64_t ldc) {
  using internal::BlasInt;
  if (d.m == 0 || d.n == 0) return;
  if (d.k == 0) return internal::ScaleMatrix(d, beta, c, ldc);
  cblas_dgemm(CblasRowMajor, internal::BlasTranspose(d.transpose_a),
              internal::BlasTranspose(d.transpose_b), BlasInt(d.m), BlasInt(d.n), BlasInt(d.k),
              alpha, a, BlasInt(lda), b, BlasInt(ldb), beta, c, BlasInt(ldc));
}

// True when OpenBLAS runs each call on the calling thread alone, so that several threads may call
// it at once (oneDNN's float GEMM always does).
inline bool BlasIsSingleThreaded() { return openblas_get_num_threads() == 1; }

// Below this many multiply-adds a GEMM runs whole on the calling thread: splitting it costs more
// than it saves.
inline constexpr int64_t kMinParallelGemmWork = int64_t{1} << 20;
// From this many multiply-adds (~1 ms on a core) the blocks run on the intra-op pool's workers
// alone (see ParallelGemm).
inline constexpr int64_t kMinPooledGemmWork = int64_t{1} << 28;

// Gemm with C split into one block of rows (or of columns, when C is wide) per intra-op thread,
// each block a single-threaded GEMM on its own thread. Every element of C still sums its k
// products in the order one GEMM would, so results do not depend on the thread count. Falls back
// to one Gemm call when OpenBLAS has threads of its own, there is one intra-op thread, or the
// product is small.
template <typename T>
void ParallelGemm(OpKernelContext* context, const GemmDims& d, T alpha, const T* a, int64_t lda,
                  const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const int64_t threads = context->device()->intra_op_threads();
  if (threads <= 1 || d.m * d.n * d.k < kMinParallelGemmWork || !BlasIsSingleThreaded()) {
    return Gemm(d, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  // Blocks of whole SIMD-friendly multiples, so that no block is a sliver.
  constexpr int64_t kAlign = 16;
  const bool split_rows = d.m >= d.n;
  const int64_t extent = split_rows ? d.m : d.n;
  const int64_t blocks = std::clamp<int64_t>(extent / kAlign, 1, threads);
  const int64_t block_size = (extent + blocks - 1) / blocks;
  const int64_t block_step = (block_size + kAlign - 1) / kAlign * kAlign;
  const int64_t num_blocks = (extent + block_step - 1) / block_step;
  auto run_blocks = [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t begin = block * block_step, end = std::min(extent, begin + block_step);
      GemmDims part = d;
      if (split_rows) {
        // Row i of op(A) is row i of A, or column i of A when transposed.
        part.m = end - begin;
        Gemm(part, alpha, a + (d.transpose_a ? begin : begin * lda), lda, b, ldb, beta,
             c + begin * ldc, ldc);
      } else {
        // Column j of op(B) is column j of B, or row j of B when transposed.
        part.n = end - begin;
        Gemm(part, alpha, a, lda, b + (d.transpose_b ? begin * ldb : begin), ldb, beta, c + begin,
             ldc);
      }
    }
  };
  ThreadPool* pool = context->device()->intra_op_pool();
  if (d.m * d.n * d.k >= kMinPooledGemmWork && pool != nullptr &&
      pool->NumThreads() >= num_blocks && pool->CurrentThreadIndex() < 0) {
    // A long product: every block on a pool worker while this thread sleeps. With this thread
    // computing one block instead, the pool's spare worker polls for work beside the two that
    // compute, which costs a large GEMM ~10% on 2 cores; waking this thread at the end costs
    // ~30 us, little against milliseconds.
    std::atomic<int64_t> remaining{num_blocks};
    Notification done;
    for (int64_t block = 0; block < num_blocks; ++block) {
      pool->Schedule([&, block] {
        run_blocks(block, block + 1);
        if (remaining.fetch_sub(1) == 1) done.Notify();
      });
    }
    done.WaitForNotification();
    return;
  }
  ParallelFor(context, num_blocks, 1e12, run_blocks);
}

}  // namespace weft::kernels
