// Small bfloat16 products for kernels that tile their own work (the fused attention): float32
// operands rounded into tiles of bfloat16 pairs, multiplied by AVX512-BF16's dot-product
// instruction into float32 sums. A oneDNN call per 64 x 64 tile costs as much as the tile's
// arithmetic; these run on the calling thread with no setup, at most of the CPU's bfloat16 rate.
//
// A "pair matrix" holds 32-bit words, each two bfloat16 values adjacent along the dimension a
// product sums over: the dot-product instruction multiplies two such words lane by lane and adds
// both products into one float32 lane. Padding (an odd count) is 0, which adds nothing.
//
// Only where the CPU has AVX512-BF16 (TileGemmBFloat16IsAvailable()); callers keep a float32 path
// for other CPUs. Pure functions of their arguments; thread-safe. Rounding is to nearest even,
// with subnormals flushed to zero as the instruction does (products of such values are below what
// float32 sums of bfloat16 products resolve anyway).
#pragma once

#include <cstdint>

namespace weft::kernels::tile_bf16 {

// Whether this CPU has AVX-512 with BF16 (the functions below may be called).
bool TileGemmBFloat16IsAvailable();

// Pairs along a row: out[r * ld_out + p] = (src[r][2p], src[r][2p + 1]) for p < (cols + 1) / 2,
// src's row r at src + r * ld. The A operand of Gemm when the sum runs along src's rows.
void PackRows(const float* src, int64_t ld, int64_t rows, int64_t cols, uint32_t* out,
              int64_t ld_out);

// Pairs down a column: out[p * ld_out + c] = (src[2p][c], src[2p + 1][c]) for p < (rows + 1) / 2.
// The B operand of Gemm when the sum runs down src's columns.
void PackRowPairs(const float* src, int64_t ld, int64_t rows, int64_t cols, uint32_t* out,
                  int64_t ld_out);

// out[c * ld_out + r] = in[r * ld + c]: a transpose of 32-bit elements (pair words or floats),
// which turns PackRows' output into a B operand and PackRowPairs' into an A operand.
void Transpose(const uint32_t* in, int64_t ld, int64_t rows, int64_t cols, uint32_t* out,
               int64_t ld_out);
void Transpose(const float* in, int64_t ld, int64_t rows, int64_t cols, float* out, int64_t ld_out);

// c[m, n] = (accumulate ? c : 0) + alpha * A B, summed over `pairs` pairs: A's row i is the words
// a[i * lda + p], B's pair p is the words b[p * ldb + j]. Rows of c at c + i * ldc.
void Gemm(int64_t m, int64_t n, int64_t pairs, const uint32_t* a, int64_t lda, const uint32_t* b,
          int64_t ldb, float alpha, bool accumulate, float* c, int64_t ldc);

}  // namespace weft::kernels::tile_bf16
