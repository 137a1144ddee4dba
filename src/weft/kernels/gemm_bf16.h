// bfloat16 GEMM for the MatMul kernels: row-major C = op(A) * op(B) with bfloat16 A, B and C and
// float32 accumulation, the way mixed precision runs a layer's product.
//
// Where the CPU multiplies bfloat16 itself (AVX512-BF16 or AMX, as oneDNN reports it), the product
// is oneDNN's matmul primitive on bfloat16 memory, which picks the instructions; each call splits C
// into one block of rows (or columns) per intra-op thread, each block a single-threaded primitive
// on its thread (as kernels/gemm.h does for float32), so results do not depend on the thread
// count. Elsewhere the inputs are widened to float32 (exact), multiplied by the float32 GEMM and
// rounded back to bfloat16, and the first such call logs that bfloat16 products run in float32 on
// this CPU. Both paths round each element of C once, from a float32 sum; they may differ in the
// order of that sum and so in the last bit.
//
// Primitives are built on first use for each shape and kept in a process-wide cache.
// Thread-safe: any number of kernels may multiply at once.
#pragma once

#include <cstdint>

#include "weft/core/bfloat16.h"
#include "weft/core/status.h"
#include "weft/framework/op_kernel.h"
#include "weft/kernels/bias_activation.h"
#include "weft/kernels/gemm.h"

namespace weft::kernels {

// c [m, n] (leading dimension ldc) = op(a) * op(b), with leading dimensions as stored (before
// op()). m, n and k may be 0. With `split` false the product runs on the calling thread alone, for
// a caller that splits a batch of products over the intra-op threads itself. Internal when oneDNN
// fails; ResourceExhausted when the float32 copies or the scratchpad cannot be allocated.
Status BFloat16Gemm(OpKernelContext* context, const GemmDims& d, const bfloat16* a, int64_t lda,
                    const bfloat16* b, int64_t ldb, bfloat16* c, int64_t ldc, bool split = true);
// The same product kept in float32, unrounded: for a product whose consumers work in float32 (a
// bias, an activation, a normalisation), which would otherwise widen it again.
Status BFloat16Gemm(OpKernelContext* context, const GemmDims& d, const bfloat16* a, int64_t lda,
                    const bfloat16* b, int64_t ldb, float* c, int64_t ldc, bool split = true);

// The float32 product (c contiguous, [m, n]) plus `bias` [n] (or null) on every row, then
// `activation`: where oneDNN multiplies, both are the primitive's epilogue, applied to each tile of
// C before it is stored (one pass over C, not two); elsewhere a pass over C after the product.
Status BFloat16GemmBiasActivation(OpKernelContext* context, const GemmDims& d, const bfloat16* a,
                                  int64_t lda, const bfloat16* b, int64_t ldb, const float* bias,
                                  FusedActivation activation, float* c);

// Whether BFloat16Gemm multiplies in bfloat16 on this CPU (decided once, from oneDNN's CPU ISA)
// rather than in float32; false while the fallback is forced.
bool BFloat16GemmIsNative();

// Forces the float32 path even on a CPU with bfloat16 instructions (true), or lets the CPU
// decide again (false); for tests that compare the two.
void ForceBFloat16GemmFallbackForTesting(bool force);

}  // namespace weft::kernels
