#include "weft/io/crc32c.h"

#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/io/crc32c_internal.h"

namespace weft::io {
namespace {

// One bit at a time, straight from the definition: the reference both fast paths must match.
uint32_t BitwiseCrc32c(const uint8_t* data, size_t size) {
  uint32_t reg = 0xFFFFFFFF;
  for (size_t i = 0; i < size; ++i) {
    reg ^= data[i];
    for (int bit = 0; bit < 8; ++bit) reg = (reg >> 1) ^ ((reg & 1) ? 0x82F63B78 : 0);
  }
  return ~reg;
}

std::vector<uint8_t> RandomBytes(size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bytes(size);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

using Crc32cFn = uint32_t (*)(uint32_t, const void*, size_t);

struct Path {
  const char* name;
  Crc32cFn extend;
};

const Path kPaths[] = {{"public", &Crc32cExtend},
                       {"software", &internal::Crc32cExtendSoftware},
                       {"hardware", &internal::Crc32cExtendHardware}};

TEST(Crc32cTest, KnownVectorsOnEveryPath) {
  const std::string digits = "123456789";
  const std::vector<uint8_t> zeros(32, 0x00);
  const std::vector<uint8_t> ones(32, 0xFF);
  for (const Path& path : kPaths) {
    SCOPED_TRACE(path.name);
    EXPECT_EQ(path.extend(0, digits.data(), digits.size()), 0xE3069283u);
    EXPECT_EQ(path.extend(0, zeros.data(), zeros.size()), 0x8A9136AAu);
    EXPECT_EQ(path.extend(0, ones.data(), ones.size()), 0x62A8AB43u);
    EXPECT_EQ(path.extend(0, nullptr, 0), 0u);
    EXPECT_EQ(path.extend(0x12345678, nullptr, 0), 0x12345678u);
  }
  EXPECT_EQ(Crc32c(digits.data(), digits.size()), 0xE3069283u);
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
}

TEST(Crc32cTest, ReportsWhichPathRuns) {
  // Informational: on a CPU without SSE4.2 the hardware entry point falls back to software, and
  // the agreement tests below compare the software path with itself.
  std::cout << "SSE4.2 crc32: " << (internal::Crc32cHardwareAvailable() ? "yes" : "no") << "\n";
}

TEST(Crc32cTest, PathsAgreeWithTheBitwiseReferenceAcrossSizesAndAlignments) {
  // Sizes around every switch between code paths: alignment prologue, single stream, three
  // streams of short blocks (3 x 256 bytes) and of long blocks (3 x 32 KiB).
  const std::vector<size_t> sizes = {0,    1,     7,     8,     9,      63,     64,
                                     65,   767,   768,   769,   1535,   1536,   1543,
                                     4099, 98303, 98304, 98305, 197375, 197376, 200003};
  const std::vector<uint8_t> bytes = RandomBytes(200003 + 16, 1);
  for (size_t size : sizes) {
    for (size_t offset = 0; offset < 16; offset += (size > 5000 ? 5 : 1)) {
      SCOPED_TRACE(::testing::Message() << "size " << size << " offset " << offset);
      const uint8_t* start = bytes.data() + offset;
      const uint32_t expected = BitwiseCrc32c(start, size);
      for (const Path& path : kPaths) {
        EXPECT_EQ(path.extend(0, start, size), expected) << path.name;
      }
    }
  }
}

TEST(Crc32cTest, ExtendOverRandomSplitsMatchesOneShot) {
  const std::vector<uint8_t> bytes = RandomBytes(300000, 2);
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t size = rng() % bytes.size();
    const size_t start = rng() % (bytes.size() - size + 1);
    const uint8_t* data = bytes.data() + start;
    const uint32_t one_shot = Crc32c(data, size);
    for (const Path& path : kPaths) {
      uint32_t crc = 0;
      size_t done = 0;
      for (int piece = 0; piece < 5 && done < size; ++piece) {
        const size_t n = piece == 4 ? size - done : rng() % (size - done + 1);
        crc = path.extend(crc, data + done, n);
        done += n;
      }
      crc = path.extend(crc, data + done, size - done);
      EXPECT_EQ(crc, one_shot) << path.name << " trial " << trial << " size " << size;
    }
  }
}

TEST(Crc32cTest, ConcatenationProperty) {
  const std::string a = "hello, ";
  const std::string b = "world";
  const std::string ab = a + b;
  EXPECT_EQ(Crc32cExtend(Crc32c(a.data(), a.size()), b.data(), b.size()),
            Crc32c(ab.data(), ab.size()));
}

TEST(Crc32cTest, HexRoundTrip) {
  EXPECT_EQ(Crc32cToHex(0xE3069283), "e3069283");
  EXPECT_EQ(Crc32cToHex(0), "00000000");
  EXPECT_EQ(Crc32cToHex(0x0000ABCD), "0000abcd");
  uint32_t crc = 7;
  EXPECT_TRUE(ParseCrc32cHex("e3069283", &crc));
  EXPECT_EQ(crc, 0xE3069283u);
  EXPECT_TRUE(ParseCrc32cHex("E3069283", &crc));
  EXPECT_EQ(crc, 0xE3069283u);
  for (const char* bad : {"", "e306928", "e30692834", "e306928g", "0xe30692", " e306928"}) {
    crc = 7;
    EXPECT_FALSE(ParseCrc32cHex(bad, &crc)) << bad;
    EXPECT_EQ(crc, 7u) << bad;
  }
}

}  // namespace
}  // namespace weft::io
