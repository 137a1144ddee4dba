#include "weft/core/bfloat16.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "weft/core/dtype.h"
#include "weft/core/tensor.h"

namespace weft {
namespace {

uint16_t Bits(float value) { return bfloat16(value).bits; }
float FromBits(uint32_t bits) { return std::bit_cast<float>(bits); }

TEST(BFloat16Test, KeepsTheUpperHalfOfExactValues) {
  for (float value : {0.0f, 1.0f, -2.5f, 0.15625f, 65536.0f, -1e-30f}) {
    const uint32_t upper = std::bit_cast<uint32_t>(value) >> 16;
    if ((std::bit_cast<uint32_t>(value) & 0xffffu) != 0) continue;  // not exact in bfloat16
    EXPECT_EQ(Bits(value), upper) << value;
    EXPECT_EQ(static_cast<float>(bfloat16(value)), value);
  }
  EXPECT_EQ(Bits(-0.0f), 0x8000u);
  EXPECT_EQ(bfloat16().bits, 0u);
}

TEST(BFloat16Test, RoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between 1 (even mantissa) and 1 + 2^-7: to the even one.
  EXPECT_EQ(Bits(FromBits(0x3f808000u)), 0x3f80u);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up to the even one.
  EXPECT_EQ(Bits(FromBits(0x3f818000u)), 0x3f82u);
  // Just above and below half an ulp.
  EXPECT_EQ(Bits(FromBits(0x3f808001u)), 0x3f81u);
  EXPECT_EQ(Bits(FromBits(0x3f807fffu)), 0x3f80u);
  EXPECT_EQ(Bits(FromBits(0xbf808001u)), 0xbf81u);  // sign does not matter
}

TEST(BFloat16Test, KeepsNaNAndInfinityAndOverflowsToInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Bits(inf), 0x7f80u);
  EXPECT_EQ(Bits(-inf), 0xff80u);
  EXPECT_EQ(Bits(std::numeric_limits<float>::max()), 0x7f80u);
  // A signalling NaN whose payload lies only in the dropped bits would become infinity if
  // truncated, and rounding could carry it there: it must come out a quiet NaN with its sign.
  for (uint32_t nan : {0x7f800001u, 0x7fffffffu, 0xff800001u, 0x7fc00000u}) {
    const bfloat16 converted(FromBits(nan));
    EXPECT_TRUE(std::isnan(static_cast<float>(converted))) << std::hex << nan;
    EXPECT_NE(converted.bits & 0x40u, 0u) << "not quiet: " << std::hex << converted.bits;
    EXPECT_EQ(converted.bits >> 15, nan >> 31);
  }
}

TEST(BFloat16Test, KeepsSubnormalsRatherThanFlushingThem) {
  const float tiny = FromBits(0x00010000u);  // the smallest positive bfloat16, subnormal
  EXPECT_EQ(Bits(tiny), 0x0001u);
  EXPECT_EQ(static_cast<float>(bfloat16(tiny)), tiny);
}

TEST(BFloat16Test, ConvertsThroughFloatToOtherTypes) {
  const bfloat16 value(-3.0f);
  EXPECT_EQ(static_cast<double>(value), -3.0);
  EXPECT_EQ(static_cast<int32_t>(value), -3);
  EXPECT_TRUE(static_cast<bool>(value));
  EXPECT_FALSE(static_cast<bool>(bfloat16(0.0f)));
  EXPECT_EQ(static_cast<float>(bfloat16::FromBits(0x4040u)), 3.0f);
}

TEST(BFloat16Test, BulkConversionsMatchTheScalarOnes) {
  // Every bfloat16 (NaNs included) and float32 values with every kind of low half, at a length
  // that leaves a partial block.
  std::vector<float> floats;
  for (uint32_t upper = 0; upper < 0x10000u; ++upper) {
    for (uint32_t lower : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      floats.push_back(FromBits(upper << 16 | lower));
    }
  }
  floats.push_back(1.5f);
  std::vector<bfloat16> halves(floats.size());
  FloatToBFloat16(floats, halves.data());
  std::vector<float> back(floats.size());
  BFloat16ToFloat(halves, back.data());
  for (size_t i = 0; i < floats.size(); ++i) {
    ASSERT_EQ(halves[i].bits, Bits(floats[i])) << i;
    ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), uint32_t{halves[i].bits} << 16) << i;
  }
}

TEST(BFloat16Test, IsADataType) {
  EXPECT_EQ(DataTypeToEnum<bfloat16>::value, DataType::kBFloat16);
  EXPECT_EQ(static_cast<int>(DataType::kBFloat16), 14);  // the reference's DT_BFLOAT16
  EXPECT_EQ(DataTypeSize(DataType::kBFloat16), 2u);
  EXPECT_EQ(DataTypeName(DataType::kBFloat16), "bfloat16");
  EXPECT_EQ(DataTypeFromName("bfloat16"), DataType::kBFloat16);
  EXPECT_EQ(DataTypeFromName("bf16"), DataType::kBFloat16);
  EXPECT_TRUE(IsValidDataType(14));
  bool visited = VisitNumericType(
      DataType::kBFloat16, [&]<typename T>() { EXPECT_TRUE((std::is_same_v<T, bfloat16>)); });
  EXPECT_TRUE(visited);
}

TEST(BFloat16Test, TensorsHoldAndPrintBFloat16) {
  Tensor t = Tensor::FromVector<bfloat16>({bfloat16(1.0f), bfloat16(-2.5f), bfloat16(0.1f)});
  EXPECT_EQ(t.TotalBytes(), 6u);
  EXPECT_EQ(t.DebugString(), "Tensor<bfloat16, [3]: 1 -2.5 0.100098>");
}

}  // namespace
}  // namespace weft
