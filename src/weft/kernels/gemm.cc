// float GEMM through oneDNN's sgemm; see gemm.h.
#include "weft/kernels/gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include "weft/kernels/onednn_util.h"

namespace weft::kernels {

void Gemm(const GemmDims& d, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
          float beta, float* c, int64_t ldc) {
  if (d.m == 0 || d.n == 0) return;
  if (d.k == 0) return internal::ScaleMatrix(d, beta, c, ldc);
  UseOneOpenMpThread();
  // oneDNN's sgemm is row-major like Weft's tensors (unlike BLAS's column-major convention).
  const dnnl_status_t status = dnnl_sgemm(d.transpose_a ? 'T' : 'N', d.transpose_b ? 'T' : 'N', d.m,
                                          d.n, d.k, alpha, a, lda, b, ldb, beta, c, ldc);
  WEFT_CHECK(status == dnnl_success)
      << "dnnl_sgemm failed (" << status << ") for " << d.m << "x" << d.n << "x" << d.k << " lda "
      << lda << " ldb " << ldb << " ldc " << ldc;
}

}  // namespace weft::kernels
