// Gemm: row-major C = alpha * op(A) * op(B) + beta * C through OpenBLAS (cblas_sgemm/dgemm), for
// float and double. OpenBLAS runs its own threads, sized by the runtime; call it from one thread at
// a time unless BlasIsSingleThreaded(). Every dimension must fit BLAS's 32-bit int (checked); m, n
// and k may be 0.
#pragma once

#include <climits>
#include <cstdint>

#include <cblas.h>

#include "weft/core/logging.h"

namespace weft::kernels {

struct GemmDims {
  int64_t m = 0;  // rows of op(A) and C
  int64_t n = 0;  // columns of op(B) and C
  int64_t k = 0;  // columns of op(A), rows of op(B)
  bool transpose_a = false;
  bool transpose_b = false;
};

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
inline void Gemm(const GemmDims& d, float alpha, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float beta, float* c, int64_t ldc) {
  using internal::BlasInt;
  if (d.m == 0 || d.n == 0) return;
  if (d.k == 0) return internal::ScaleMatrix(d, beta, c, ldc);
  cblas_sgemm(CblasRowMajor, internal::BlasTranspose(d.transpose_a),
              internal::BlasTranspose(d.transpose_b), BlasInt(d.m), BlasInt(d.n), BlasInt(d.k),
              alpha, a, BlasInt(lda), b, BlasInt(ldb), beta, c, BlasInt(ldc));
}

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
// it at once.
inline bool BlasIsSingleThreaded() { return openblas_get_num_threads() == 1; }

}  // namespace weft::kernels
