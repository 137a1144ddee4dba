#include "weft/kernels/state/philox.h"

#include <cmath>

#include <gtest/gtest.h>

namespace weft::kernels::state {
namespace {

// Known-answer vectors published with the Random123 library for philox4x32-10.
TEST(PhiloxTest, KnownAnswers) {
  using Block = Philox4x32::Block;
  EXPECT_EQ(Philox4x32::Generate({0, 0, 0, 0}, {0, 0}),
            (Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox4x32::Generate({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                                 {0xffffffff, 0xffffffff}),
            (Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox4x32::Generate({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                                 {0xa4093822, 0x299f31d0}),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PhiloxTest, UniformConversionsStayInHalfOpenUnitInterval) {
  EXPECT_EQ(UniformFloat(0), 0.0f);
  EXPECT_LT(UniformFloat(0xffffffffu), 1.0f);
  EXPECT_EQ(UniformFloat(0x80000000u), 0.5f);
  EXPECT_EQ(UniformDouble(0, 0), 0.0);
  EXPECT_LT(UniformDouble(0xffffffffu, 0xffffffffu), 1.0);
  EXPECT_EQ(UniformDouble(0x80000000u, 0), 0.5);
}

TEST(PhiloxTest, BoxMullerIsFiniteAtTheEnds) {
  for (float u1 : {0.0f, UniformFloat(0xffffffffu)}) {
    float z0, z1;
    BoxMuller(u1, 0.25f, &z0, &z1);
    EXPECT_TRUE(std::isfinite(z0) && std::isfinite(z1)) << u1;
  }
  double z0, z1;
  BoxMuller(0.0, 0.0, &z0, &z1);  // 1 - u1 = 1: radius 0
  EXPECT_EQ(z0, 0.0);
  EXPECT_EQ(z1, 0.0);
}

TEST(PhiloxTest, KeysDependOnBothSeeds) {
  EXPECT_NE(KeyFromSeeds(1, 2), KeyFromSeeds(2, 1));
  EXPECT_NE(KeyFromSeeds(1, 0), KeyFromSeeds(0, 1));
  EXPECT_EQ(KeyFromSeeds(7, 3), KeyFromSeeds(7, 3));
}

}  // namespace
}  // namespace weft::kernels::state
