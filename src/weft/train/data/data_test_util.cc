// Test helpers for the data readers; see data_test_util.h.
#include "weft/train/data/data_test_util.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <zlib.h>

namespace weft::train {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "weft_data_test.XXXXXX").string();
  char* made = ::mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr) << "mkdtemp failed for " << pattern;
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code error;
  std::filesystem::remove_all(path_, error);
}

std::string TempDir::File(const std::string& name) const {
  return (std::filesystem::path(path_) / name).string();
}

Bytes IdxBytes(const std::vector<uint32_t>& dims, const Bytes& data, uint8_t dtype_code) {
  Bytes out = {0, 0, dtype_code, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Bytes Gzip(const Bytes& bytes) {
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

void WriteBytes(const std::string& path, const Bytes& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(file.good()) << "cannot write " << path;
}

Bytes RandomBytes(uint64_t seed, size_t count) {
  std::mt19937_64 rng(seed);
  Bytes out(count);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

}  // namespace weft::train
