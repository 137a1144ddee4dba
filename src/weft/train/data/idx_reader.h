// Reads IDX files, the format MNIST and Fashion-MNIST ship in: a big-endian magic (two zero bytes,
// a dtype code, a rank), `rank` big-endian uint32 dimensions, then the elements in row-major order.
// Only dtype code 0x08 (unsigned byte) is supported. Files may be gzip'd or plain; the format is
// detected from the content, not the name. Stateless and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weft/core/statusor.h"

namespace weft::train {

// The largest IDX payload ReadIdxFile accepts (1 GiB); larger dims are treated as corrupt.
inline constexpr int64_t kMaxIdxBytes = int64_t{1} << 30;
// The largest rank ReadIdxFile accepts.
inline constexpr int kMaxIdxRank = 8;

// The contents of an IDX file of unsigned bytes.
struct IdxArray {
  std::vector<int64_t> dims;  // as stored: e.g. [60000, 28, 28] for images, [60000] for labels
  std::vector<uint8_t> data;  // row-major; data.size() == NumElements()

  int rank() const { return static_cast<int>(dims.size()); }
  int64_t NumElements() const;
  // "[60000,28,28]".
  std::string DimsString() const;
};

// Reads the whole IDX file at `path`. Every failure names the path and what is wrong:
//   NotFound          the file does not exist
//   InvalidArgument   not an IDX file (bad magic), rank 0 or above kMaxIdxRank, dims whose
//                     product exceeds kMaxIdxBytes, bytes left over after the data
//   Unimplemented     a valid IDX dtype other than unsigned byte
//   DataLoss          the file (or its inflated stream) ends before the dims say, or its gzip
//                     stream is corrupt
// Never crashes on any input; memory use is bounded by the bytes actually present.
StatusOr<IdxArray> ReadIdxFile(const std::string& path);

}  // namespace weft::train
