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

// Labelled examples from an IDX image file ([count, ...]) and an IDX label file ([count]).
struct IdxExamples {
  Tensor images;  // float32 [count, pixels], each byte / 255
  Tensor labels;  // int64 [count]
  // The files they were read from (a dataset of them is described by these paths).
  std::string images_path{};
  std::string labels_path{};
  int64_t size() const { return labels.IsInitialized() ? labels.dim_size(0) : 0; }
};

// Reads both files (ReadIdxFile's errors) and checks that they hold as many images as labels;
// InvalidArgument naming the file otherwise.
StatusOr<IdxExamples> ReadIdxExamples(const std::string& images_path,
                                      const std::string& labels_path);

}  // namespace weft::data
