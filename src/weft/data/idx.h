// Reads IDX files (the MNIST format): a big-endian magic (two zero bytes, dtype code, rank), rank
// big-endian uint32 dimensions, then row-major elements. Only unsigned bytes (0x08); plain or
// gzip'd input, told apart by content. Stateless and thread-safe.
#pragma once

#include <string>

#include "weft/core/statusor.h"
#include "weft/core/tensor.h"

namespace weft::data {

// The largest payload accepted (1 GiB); bigger dims are taken for a corrupt header.
inline constexpr int64_t kMaxIdxBytes = int64_t{1} << 30;
inline constexpr int kMaxIdxRank = 8;

// The file's contents as a uint8 tensor of the stored dims. NotFound for a missing file;
// InvalidArgument for a bad magic, rank, oversized dims or trailing bytes; Unimplemented for
// other IDX dtypes; DataLoss for a truncated or corrupt file. Every message names the path.
StatusOr<Tensor> ReadIdxFile(const std::string& path);

}  // namespace weft::data
