// Tests for the AVX512-BF16 tile products and their packing (tile_gemm_bf16.h): each packing
// against its definition with the portable bfloat16 rounding, transposes of every edge shape, and
// products of every row and column count around the micro-kernel's 6 x 64 block against the same
// products in double of the rounded operands. Skipped where the CPU lacks AVX512-BF16.
#include "weft/kernels/tile_gemm_bf16.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/bfloat16.h"

namespace weft::kernels::tile_bf16 {
namespace {

#define SKIP_WITHOUT_AVX512_BF16() \
  if (!TileGemmBFloat16IsAvailable()) GTEST_SKIP() << "this CPU lacks AVX512-BF16"

std::vector<float> RandomFloats(int64_t n, uint32_t seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> values(n);
  for (float& v : values) v = normal(generator);
  return values;
}

uint16_t Rounded(float value) { return bfloat16(value).bits; }
float Widened(uint32_t word, int half) {
  return static_cast<float>(bfloat16::FromBits(static_cast<uint16_t>(word >> (16 * half))));
}

TEST(TileGemmBFloat16Test, PackRowsRoundsEachRowIntoPairsPaddedWithZero) {
  SKIP_WITHOUT_AVX512_BF16();
  for (int64_t cols : {1, 2, 15, 16, 17, 31, 32, 33, 64, 70}) {
    const int64_t rows = 3, ld = cols + 5, pairs = (cols + 1) / 2, ld_out = pairs + 2;
    const std::vector<float> src = RandomFloats(rows * ld, 1);
    std::vector<uint32_t> out(rows * ld_out, 0xdeadbeef);
    PackRows(src.data(), ld, rows, cols, out.data(), ld_out);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t p = 0; p < pairs; ++p) {
        const uint32_t word = out[r * ld_out + p];
        EXPECT_EQ(word & 0xffff, Rounded(src[r * ld + 2 * p])) << cols << " " << r << " " << p;
        const uint16_t high = 2 * p + 1 < cols ? Rounded(src[r * ld + 2 * p + 1]) : 0;
        EXPECT_EQ(word >> 16, high) << cols << " " << r << " " << p;
      }
      // Past the pairs, the output is left alone.
      for (int64_t p = pairs; p < ld_out; ++p) EXPECT_EQ(out[r * ld_out + p], 0xdeadbeef);
    }
  }
}

TEST(TileGemmBFloat16Test, PackRowPairsInterleavesTwoRowsAndPadsAnOddLastRowWithZero) {
  SKIP_WITHOUT_AVX512_BF16();
  for (int64_t rows : {1, 2, 5, 64}) {
    for (int64_t cols : {1, 16, 17, 40}) {
      const int64_t ld = cols + 3, ld_out = cols + 1;
      const std::vector<float> src = RandomFloats(rows * ld, 2);
      std::vector<uint32_t> out(((rows + 1) / 2) * ld_out, 0xdeadbeef);
      PackRowPairs(src.data(), ld, rows, cols, out.data(), ld_out);
      for (int64_t p = 0; p < (rows + 1) / 2; ++p) {
        for (int64_t c = 0; c < cols; ++c) {
          const uint32_t word = out[p * ld_out + c];
          EXPECT_EQ(word & 0xffff, Rounded(src[2 * p * ld + c]));
          const uint16_t high = 2 * p + 1 < rows ? Rounded(src[(2 * p + 1) * ld + c]) : 0;
          EXPECT_EQ(word >> 16, high) << rows << "x" << cols << " at " << p << "," << c;
        }
        EXPECT_EQ(out[p * ld_out + cols], 0xdeadbeef);
      }
    }
  }
}

TEST(TileGemmBFloat16Test, TransposeMovesEveryElementOfEveryEdgeShape) {
  SKIP_WITHOUT_AVX512_BF16();
  for (int64_t rows : {1, 15, 16, 17, 32, 45}) {
    for (int64_t cols : {1, 16, 20, 48, 50}) {
      const int64_t ld = cols + 2, ld_out = rows + 3;
      std::vector<uint32_t> in(rows * ld);
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint32_t>(i * 2654435761u);
      std::vector<uint32_t> out(cols * ld_out, 7);
      Transpose(in.data(), ld, rows, cols, out.data(), ld_out);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          ASSERT_EQ(out[c * ld_out + r], in[r * ld + c])
              << rows << "x" << cols << " " << r << "," << c;
        }
      }
      for (int64_t c = 0; c < cols; ++c) {
        for (int64_t r = rows; r < ld_out; ++r) ASSERT_EQ(out[c * ld_out + r], 7u);
      }
    }
  }
}

// c = (accumulate ? c : 0) + alpha * A B with A [m, k] and B [k, n] packed from floats: every
// shape around the micro-kernel's blocks, against double sums of the same rounded values.
void ExpectProduct(int64_t m, int64_t n, int64_t k, bool accumulate) {
  const int64_t pairs = (k + 1) / 2;
  const std::vector<float> a = RandomFloats(m * k, 3), b = RandomFloats(k * n, 4);
  std::vector<uint32_t> packed_a(m * pairs), packed_b(pairs * n);
  PackRows(a.data(), k, m, k, packed_a.data(), pairs);
  PackRowPairs(b.data(), n, k, n, packed_b.data(), n);
  const int64_t ldc = n + 1;
  std::vector<float> c = RandomFloats(m * ldc, 5);
  const std::vector<float> before = c;
  const float alpha = 0.75f;
  Gemm(m, n, pairs, packed_a.data(), pairs, packed_b.data(), n, alpha, accumulate, c.data(), ldc);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double product = static_cast<double>(Widened(packed_a[i * pairs + p / 2], p % 2)) *
                               Widened(packed_b[(p / 2) * n + j], p % 2);
        sum += product;
        magnitude += std::abs(product);
      }
      const double expected = (accumulate ? before[i * ldc + j] : 0) + alpha * sum;
      // float32 sums of k products: a few ulps of the magnitude summed.
      EXPECT_NEAR(c[i * ldc + j], expected, 1e-6 * (1 + magnitude) * (k + 1))
          << m << "x" << n << "x" << k << " at " << i << "," << j;
    }
    // The padding column of c is never written.
    EXPECT_EQ(c[i * ldc + n], before[i * ldc + n]);
  }
}

TEST(TileGemmBFloat16Test, ProductsOfEveryBlockShapeMatchDoubleSumsOfTheRoundedOperands) {
  SKIP_WITHOUT_AVX512_BF16();
  for (int64_t m : {1, 5, 6, 7, 13, 64}) {
    for (int64_t n : {1, 16, 17, 63, 64, 65, 130}) {
      for (int64_t k : {1, 2, 3, 64}) ExpectProduct(m, n, k, /*accumulate=*/false);
    }
  }
  ExpectProduct(64, 64, 64, /*accumulate=*/true);
  ExpectProduct(7, 33, 9, /*accumulate=*/true);
}

TEST(TileGemmBFloat16Test, ZeroPairsLeavesOrClearsTheOutput) {
  SKIP_WITHOUT_AVX512_BF16();
  std::vector<float> c = {1, 2, 3, 4};
  Gemm(2, 2, 0, nullptr, 0, nullptr, 0, 1, /*accumulate=*/true, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{1, 2, 3, 4}));
  Gemm(2, 2, 0, nullptr, 0, nullptr, 0, 1, /*accumulate=*/false, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace weft::kernels::tile_bf16
