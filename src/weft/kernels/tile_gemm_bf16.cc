// AVX512-BF16 tile products and the packing around them; see tile_gemm_bf16.h.
#include "weft/kernels/tile_gemm_bf16.h"

#include <algorithm>
#include <array>

#include "weft/core/logging.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define WEFT_HAVE_TILE_GEMM_BF16 1
// GCC 12's AVX-512 intrinsics (_mm512_setzero_ps, the masked loads) start from a deliberately
// uninitialised register and warn about it inside its own headers (see CMakeLists.txt).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#endif

namespace weft::kernels::tile_bf16 {

#ifdef WEFT_HAVE_TILE_GEMM_BF16
namespace {

#define WEFT_TILE_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// The mask of the first `count` lanes (none for count <= 0, all 16 from 16 on).
WEFT_TILE_TARGET inline __mmask16 FirstLanes(int64_t count) {
  if (count <= 0) return 0;
  return static_cast<__mmask16>(count >= 16 ? 0xffff : (1u << count) - 1);
}

// 16 floats (the first `lanes`, the rest 0) rounded to bfloat16, each in the low half of a word.
WEFT_TILE_TARGET inline __m512i RoundToLowHalves(const float* src, __mmask16 lanes) {
  const __m256bh rounded = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(lanes, src));
  return _mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(rounded));
}

WEFT_TILE_TARGET void PackRowsAvx512(const float* src, int64_t ld, int64_t rows, int64_t cols,
                                     uint32_t* out, int64_t ld_out) {
  const int64_t pairs = (cols + 1) / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = src + r * ld;
    uint32_t* dst = out + r * ld_out;
    // 32 floats become 16 words: cvtne2ps puts its second operand's 16 values first.
    int64_t c = 0;
    for (; c + 32 <= cols; c += 32) {
      const __m512bh both =
          _mm512_cvtne2ps_pbh(_mm512_loadu_ps(row + c + 16), _mm512_loadu_ps(row + c));
      _mm512_storeu_si512(dst + c / 2, reinterpret_cast<__m512i>(both));
    }
    if (c < cols) {
      const __m512bh both =
          _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(FirstLanes(cols - c - 16), row + c + 16),
                              _mm512_maskz_loadu_ps(FirstLanes(cols - c), row + c));
      _mm512_mask_storeu_epi32(dst + c / 2, FirstLanes(pairs - c / 2),
                               reinterpret_cast<__m512i>(both));
    }
  }
}

WEFT_TILE_TARGET void PackRowPairsAvx512(const float* src, int64_t ld, int64_t rows, int64_t cols,
                                         uint32_t* out, int64_t ld_out) {
  for (int64_t p = 0; p < (rows + 1) / 2; ++p) {
    const float* first = src + 2 * p * ld;
    const bool has_second = 2 * p + 1 < rows;
    uint32_t* dst = out + p * ld_out;
    for (int64_t c = 0; c < cols; c += 16) {
      const __mmask16 lanes = FirstLanes(cols - c);
      __m512i words = RoundToLowHalves(first + c, lanes);
      if (has_second) {
        words =
            _mm512_or_si512(words, _mm512_slli_epi32(RoundToLowHalves(first + ld + c, lanes), 16));
      }
      // Unmasked where whole: masked stores are slow on AMD's Zen 4 and 5 (see simd_math.cc).
      if (lanes == 0xffff) {
        _mm512_storeu_si512(dst + c, words);
      } else {
        _mm512_mask_storeu_epi32(dst + c, lanes, words);
      }
    }
  }
}

// A 16 x 16 block of 32-bit elements transposed in registers: pairs of rows interleaved by 32 bits,
// then by 64, then 128-bit lanes gathered across four registers.
WEFT_TILE_TARGET void Transpose16x16(const uint32_t* in, int64_t ld, uint32_t* out,
                                     int64_t ld_out) {
  __m512i r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(in + i * ld);
#pragma GCC unroll 16
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
// u[4g + x] holds, in 128-bit lane L, column 4L + x of rows 4g .. 4g + 3.
#pragma GCC unroll 16
  for (int g = 0; g < 4; ++g) {
    r[4 * g] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    r[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    r[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    r[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
#pragma GCC unroll 16
  for (int x = 0; x < 4; ++x) {
    const __m512i even_low = _mm512_shuffle_i32x4(r[x], r[4 + x], 0x88);
    const __m512i even_high = _mm512_shuffle_i32x4(r[8 + x], r[12 + x], 0x88);
    const __m512i odd_low = _mm512_shuffle_i32x4(r[x], r[4 + x], 0xdd);
    const __m512i odd_high = _mm512_shuffle_i32x4(r[8 + x], r[12 + x], 0xdd);
    _mm512_storeu_si512(out + x * ld_out, _mm512_shuffle_i32x4(even_low, even_high, 0x88));
    _mm512_storeu_si512(out + (8 + x) * ld_out, _mm512_shuffle_i32x4(even_low, even_high, 0xdd));
    _mm512_storeu_si512(out + (4 + x) * ld_out, _mm512_shuffle_i32x4(odd_low, odd_high, 0x88));
    _mm512_storeu_si512(out + (12 + x) * ld_out, _mm512_shuffle_i32x4(odd_low, odd_high, 0xdd));
  }
}

WEFT_TILE_TARGET void TransposeAvx512(const uint32_t* in, int64_t ld, int64_t rows, int64_t cols,
                                      uint32_t* out, int64_t ld_out) {
  const int64_t full_rows = rows / 16 * 16, full_cols = cols / 16 * 16;
  for (int64_t r = 0; r < full_rows; r += 16) {
    for (int64_t c = 0; c < full_cols; c += 16) {
      Transpose16x16(in + r * ld + c, ld, out + c * ld_out + r, ld_out);
    }
  }
  // The ragged edges, element by element.
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = r < full_rows ? full_cols : 0; c < cols; ++c) {
      out[c * ld_out + r] = in[r * ld + c];
    }
  }
}

// Rows x (16 * Vectors) of C, the last vector's lanes limited to `last`: the accumulators stay in
// registers for the whole sum (the loops over them unrolled: -O2 alone keeps them in memory) (6 x 4
// of them, 4 B vectors and a broadcast: 29 of 32 registers).
template <int Rows, int Vectors>
WEFT_TILE_TARGET void MicroKernel(int64_t pairs, const uint32_t* a, int64_t lda, const uint32_t* b,
                                  int64_t ldb, __mmask16 last, float alpha, bool accumulate,
                                  float* c, int64_t ldc) {
  __m512 sums[Rows][Vectors];
#pragma GCC unroll 8
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 8
    for (int v = 0; v < Vectors; ++v) sums[i][v] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh columns[Vectors];
#pragma GCC unroll 8
    for (int v = 0; v < Vectors; ++v) {
      const uint32_t* at = b + p * ldb + 16 * v;
      columns[v] = reinterpret_cast<__m512bh>(v + 1 < Vectors ? _mm512_loadu_si512(at)
                                                              : _mm512_maskz_loadu_epi32(last, at));
    }
#pragma GCC unroll 8
    for (int i = 0; i < Rows; ++i) {
      const __m512bh row =
          reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[i * lda + p])));
#pragma GCC unroll 8
      for (int v = 0; v < Vectors; ++v) sums[i][v] = _mm512_dpbf16_ps(sums[i][v], row, columns[v]);
    }
  }
  const __m512 scale = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 8
    for (int v = 0; v < Vectors; ++v) {
      float* at = c + i * ldc + 16 * v;
      const __mmask16 lanes = v + 1 < Vectors ? __mmask16{0xffff} : last;
      const __m512 result =
          accumulate ? _mm512_fmadd_ps(sums[i][v], scale, _mm512_maskz_loadu_ps(lanes, at))
                     : _mm512_mul_ps(sums[i][v], scale);
      if (lanes == 0xffff) {
        _mm512_storeu_ps(at, result);
      } else {
        _mm512_mask_storeu_ps(at, lanes, result);
      }
    }
  }
}

constexpr int kMaxRows = 6;
constexpr int kMaxVectors = 4;
using MicroKernelFn = void (*)(int64_t, const uint32_t*, int64_t, const uint32_t*, int64_t,
                               __mmask16, float, bool, float*, int64_t);

template <int Rows>
constexpr std::array<MicroKernelFn, kMaxVectors> KernelsFor() {
  return {&MicroKernel<Rows, 1>, &MicroKernel<Rows, 2>, &MicroKernel<Rows, 3>,
          &MicroKernel<Rows, 4>};
}
// kKernels[rows - 1][vectors - 1].
constexpr std::array<std::array<MicroKernelFn, kMaxVectors>, kMaxRows> kKernels = {
    KernelsFor<1>(), KernelsFor<2>(), KernelsFor<3>(),
    KernelsFor<4>(), KernelsFor<5>(), KernelsFor<6>()};

}  // namespace

bool TileGemmBFloat16IsAvailable() {
  static const bool available =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  return available;
}

void PackRows(const float* src, int64_t ld, int64_t rows, int64_t cols, uint32_t* out,
              int64_t ld_out) {
  PackRowsAvx512(src, ld, rows, cols, out, ld_out);
}

void PackRowPairs(const float* src, int64_t ld, int64_t rows, int64_t cols, uint32_t* out,
                  int64_t ld_out) {
  PackRowPairsAvx512(src, ld, rows, cols, out, ld_out);
}

void Transpose(const uint32_t* in, int64_t ld, int64_t rows, int64_t cols, uint32_t* out,
               int64_t ld_out) {
  TransposeAvx512(in, ld, rows, cols, out, ld_out);
}

void Transpose(const float* in, int64_t ld, int64_t rows, int64_t cols, float* out,
               int64_t ld_out) {
  // Only bits move: floats go through as their 32-bit patterns.
  static_assert(sizeof(float) == sizeof(uint32_t));
  TransposeAvx512(reinterpret_cast<const uint32_t*>(in), ld, rows, cols,
                  reinterpret_cast<uint32_t*>(out), ld_out);
}

void Gemm(int64_t m, int64_t n, int64_t pairs, const uint32_t* a, int64_t lda, const uint32_t* b,
          int64_t ldb, float alpha, bool accumulate, float* c, int64_t ldc) {
  constexpr int64_t kPanel = 16 * kMaxVectors;
  // B's panel of kPanel columns stays in L1 while every row block of A passes over it.
  for (int64_t j = 0; j < n; j += kPanel) {
    const int64_t columns = std::min(kPanel, n - j);
    const int64_t vectors = (columns + 15) / 16;
    const __mmask16 last = FirstLanes(columns - 16 * (vectors - 1));
    for (int64_t i = 0; i < m; i += kMaxRows) {
      const int64_t rows = std::min<int64_t>(kMaxRows, m - i);
      kKernels[rows - 1][vectors - 1](pairs, a + i * lda, lda, b + j, ldb, last, alpha, accumulate,
                                      c + i * ldc + j, ldc);
    }
  }
}

#else  // no AVX-512 intrinsics on this platform: callers take their float32 path.

bool TileGemmBFloat16IsAvailable() { return false; }

void PackRows(const float*, int64_t, int64_t, int64_t, uint32_t*, int64_t) {
  WEFT_CHECK(false) << "tile_bf16::PackRows called where TileGemmBFloat16IsAvailable() is false";
}
void PackRowPairs(const float*, int64_t, int64_t, int64_t, uint32_t*, int64_t) {
  WEFT_CHECK(false)
      << "tile_bf16::PackRowPairs called where TileGemmBFloat16IsAvailable() is false";
}
void Transpose(const uint32_t*, int64_t, int64_t, int64_t, uint32_t*, int64_t) {
  WEFT_CHECK(false) << "tile_bf16::Transpose called where TileGemmBFloat16IsAvailable() is false";
}
void Transpose(const float*, int64_t, int64_t, int64_t, float*, int64_t) {
  WEFT_CHECK(false) << "tile_bf16::Transpose called where TileGemmBFloat16IsAvailable() is false";
}
void Gemm(int64_t, int64_t, int64_t, const uint32_t*, int64_t, const uint32_t*, int64_t, float,
          bool, float*, int64_t) {
  WEFT_CHECK(false) << "tile_bf16::Gemm called where TileGemmBFloat16IsAvailable() is false";
}

#endif

}  // namespace weft::kernels::tile_bf16
