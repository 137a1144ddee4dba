// Helpers for tests that write IDX files (the data readers', `weft train`'s): IDX byte strings,
// gzip compression, writing bytes to a file, and pseudo-random bytes. Test-only.
#pragma once

#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <zlib.h>

namespace weft::data::testing {

using Bytes = std::vector<uint8_t>;

// An IDX file's bytes: magic 00 00 `dtype_code` rank, big-endian dims, then `data` as is.
inline Bytes IdxBytes(const std::vector<uint32_t>& dims, const Bytes& data,
                      uint8_t dtype_code = 0x08) {
  Bytes out = {0, 0, dtype_code, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// `bytes` as one gzip member (zlib's deflate with the gzip wrapper).
inline Bytes Gzip(const Bytes& bytes) {
  z_stream stream{};
  // 16 + MAX_WBITS: write the gzip wrapper rather than zlib's.
  int rc = deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  EXPECT_EQ(rc, Z_OK);
  Bytes out(deflateBound(&stream, bytes.size()) + 32);
  stream.next_in = const_cast<Bytef*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  rc = deflate(&stream, Z_FINISH);
  EXPECT_EQ(rc, Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// Writes `bytes` to `path`, replacing it (test failure on error). Loops should write a new file
// per case: truncating a freshly written file can stall on writeback for milliseconds.
inline void WriteBytes(const std::string& path, const Bytes& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(file.good()) << "cannot write " << path;
}

// `count` bytes from a fixed pseudo-random sequence determined by `seed`.
inline Bytes RandomBytes(uint64_t seed, size_t count) {
  std::mt19937_64 rng(seed);
  Bytes out(count);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

}  // namespace weft::data::testing
