// Helpers for the data tests: a scratch directory, IDX byte strings, and gzip compression.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::train {

using Bytes = std::vector<uint8_t>;

// A fresh directory under the system's temp directory, removed with everything in it on
// destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name.
  std::string File(const std::string& name) const;

 private:
  std::string path_;
};

// An IDX file's bytes: magic 00 00 `dtype_code` rank, big-endian dims, then `data` as is.
Bytes IdxBytes(const std::vector<uint32_t>& dims, const Bytes& data, uint8_t dtype_code = 0x08);

// `bytes` as one gzip member (zlib's deflate with the gzip wrapper).
Bytes Gzip(const Bytes& bytes);

// Writes `bytes` to `path`, replacing it (test failure on error). Loops should write a new file
// per case: truncating a freshly written file can stall on writeback for milliseconds.
void WriteBytes(const std::string& path, const Bytes& bytes);

// `count` bytes from a fixed pseudo-random sequence determined by `seed`.
Bytes RandomBytes(uint64_t seed, size_t count);

}  // namespace weft::train
