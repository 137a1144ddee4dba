// The safetensors file format (https://huggingface.co/docs/safetensors): 8 bytes little-endian
// header length N, N bytes of JSON header (padded with spaces to a multiple of 8), then the tensor
// bytes. The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets into the bytes after the header; tensors packed in order without holes) and may hold
// "__metadata__", a map of strings. Dtypes: F32, F64, I32, I64, U8, BOOL, BF16; data little-endian,
// row-major. Weft adds one metadata entry per tensor, "crc32c/<name>": the CRC32C of its bytes as
// 8 lower-case hex digits, checked on every read.
//
// Reading never trusts the file: a header length beyond the file, JSON that does not parse, an
// unknown dtype, offsets that overlap, leave holes, run past the end or disagree with the shape,
// and a CRC that does not match are all DataLoss errors naming the file and, where there is one,
// the tensor. Thread-safe: a reader may serve concurrent Reads (pread, no shared position).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/core/tensor.h"

namespace weft::io {

// "F32", "F64", "I32", "I64", "U8", "BOOL", "BF16"; InvalidArgument for other dtypes.
StatusOr<std::string> SafetensorsDtypeName(DataType dtype);
// The inverse; kInvalid for a name Weft does not read.
DataType DataTypeFromSafetensorsName(std::string_view name);

// One tensor of a file, as its header describes it.
struct SafetensorsEntry {
  std::string name;
  DataType dtype = DataType::kInvalid;
  TensorShape shape;
  uint64_t begin = 0;  // offsets into the data section
  uint64_t end = 0;
  bool has_crc32c = false;  // files written by other tools may have none
  uint32_t crc32c = 0;
};

// What WriteSafetensorsFile wrote.
struct SafetensorsFileInfo {
  uint64_t file_bytes = 0;
  std::vector<SafetensorsEntry> tensors;  // in the order given
};

struct SafetensorsWriteOptions {
  // When nonzero, the tensor bytes go to the file in pieces of at most this many bytes, and
  // `between_pieces` runs after each: a writer in the background paces itself with it, so that
  // the kernel's copying into the page cache is spread out rather than taken from the cores in
  // one burst.
  size_t piece_bytes = 0;
  std::function<void()> between_pieces;
};

// Writes `tensors` (name, value; names unique and not "__metadata__") in that order to `path`
// through a DurableFileWriter: the bytes go from each tensor's buffer to the file without a copy,
// and the file appears under `path` only once complete and synced. `metadata` joins the crc32c
// entries in "__metadata__". Errors name the path (and the tensor, for a bad name or dtype).
StatusOr<SafetensorsFileInfo> WriteSafetensorsFile(
    const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata = {},
    const SafetensorsWriteOptions& options = {});

class SafetensorsReader {
 public:
  // Opens `path` and parses and checks its header (not the data). NotFound naming the path when
  // it is missing; DataLoss (see the file comment) when the header is bad.
  static StatusOr<std::unique_ptr<SafetensorsReader>> Open(const std::string& path);
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  const std::string& path() const { return path_; }
  uint64_t file_bytes() const { return file_bytes_; }
  // Every tensor, in file order.
  const std::vector<SafetensorsEntry>& tensors() const { return tensors_; }
  // Null when the file has no tensor `name`.
  const SafetensorsEntry* Find(std::string_view name) const;
  // "__metadata__" as written (crc32c entries included).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Reads tensor `name` into a new tensor of its dtype and shape and checks its CRC32C (when the
  // file has one). NotFound naming the file and the tensor when absent; DataLoss for a short read
  // (a truncated file) or a CRC mismatch.
  StatusOr<Tensor> Read(std::string_view name) const;
  // The same into `*out`, which must already have the entry's dtype and shape (so the caller
  // chooses the buffer).
  Status ReadInto(const SafetensorsEntry& entry, Tensor* out) const;

 private:
  SafetensorsReader() = default;
  // Reads and checks the header; fills everything below but fd_, path_ and file_bytes_.
  Status ParseHeader();
  // ParseHeader's steps. The header's JSON text, read after its 8-byte length; sets data_start_.
  StatusOr<std::string> ReadHeaderText();
  // Sorts tensors_ into file order, checks that their data fills the data section exactly (no
  // overlap, hole or truncation) and indexes them by name.
  Status CheckDataLayout();
  // Takes each tensor's CRC32C from the metadata: every tensor has one, or none does.
  Status ReadChecksums();

  std::string path_;
  int fd_ = -1;
  uint64_t file_bytes_ = 0;
  uint64_t data_start_ = 0;  // 8 + header length
  std::vector<SafetensorsEntry> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace weft::io
