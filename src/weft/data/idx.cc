// ReadIdxFile through zlib's gz* interface, which inflates gzip input and passes plain input
// through unchanged, so one code path serves both. The header is checked before any payload is
// allocated, so a lying header cannot make us allocate more than kMaxIdxBytes.
#include "weft/data/idx.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <memory>
#include <system_error>
#include <vector>

#include <zlib.h>

#include "weft/core/str_util.h"

namespace weft::data {
namespace {

constexpr uint8_t kUnsignedByteCode = 0x08;
// Deflate's largest compression ratio (a long run of one byte), with the gzip framing ignored.
constexpr uint64_t kMaxInflateRatio = 1032;

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzPtr = std::unique_ptr<gzFile_s, GzCloser>;

// Reads up to `size` bytes; fewer only at the end of the (inflated) stream.
StatusOr<size_t> ReadBytes(gzFile file, const std::string& path, uint8_t* out, size_t size) {
  size_t filled = 0;
  while (filled < size) {
    const unsigned step = static_cast<unsigned>(std::min<size_t>(size - filled, INT_MAX / 2));
    const int got = gzread(file, out + filled, step);
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file, &code);
      return DataLoss("corrupt gzip stream in '", path, "': ", message);
    }
    if (got == 0) break;
    filled += static_cast<size_t>(got);
  }
  return filled;
}

uint32_t BigEndian32(const uint8_t* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         uint32_t{bytes[3]};
}

// Reads and checks the 4-byte magic; returns the rank it gives.
StatusOr<int> ReadIdxMagic(gzFile file, const std::string& path) {
  uint8_t magic[4];
  WEFT_ASSIGN_OR_RETURN(const size_t got, ReadBytes(file, path, magic, sizeof(magic)));
  if (got < sizeof(magic)) {
    return DataLoss("'", path, "' ends after ", got, " bytes, inside its 4-byte IDX magic");
  }
  if (magic[0] != 0 || magic[1] != 0) {
    return InvalidArgument("'", path,
                           "' is not an IDX file: its magic does not start with two "
                           "zero bytes");
  }
  if (magic[2] != kUnsignedByteCode) {
    return Unimplemented("'", path, "' holds IDX dtype code ", int{magic[2]},
                         "; only unsigned byte (8) is supported");
  }
  const int rank = magic[3];
  if (rank == 0 || rank > kMaxIdxRank) {
    return InvalidArgument("'", path, "' has IDX rank ", rank, "; expected 1 to ", kMaxIdxRank);
  }
  return rank;
}

// Reads the `rank` big-endian dimensions; their product, the data's size in bytes, into
// *total_bytes (at most kMaxIdxBytes).
StatusOr<std::vector<int64_t>> ReadIdxDims(gzFile file, const std::string& path, int rank,
                                           uint64_t* total_bytes) {
  uint8_t dim_bytes[4 * kMaxIdxRank];
  const size_t want = 4 * static_cast<size_t>(rank);
  WEFT_ASSIGN_OR_RETURN(const size_t got, ReadBytes(file, path, dim_bytes, want));
  if (got < want) {
    return DataLoss("'", path, "' ends inside its IDX header: ", got, " of ", want,
                    " dimension bytes");
  }
  std::vector<int64_t> dims(rank);
  uint64_t total = 1;
  for (int i = 0; i < rank; ++i) {
    dims[i] = BigEndian32(dim_bytes + 4 * i);
    // total <= 2^30 before each step and a dim < 2^32, so the product cannot overflow.
    total *= static_cast<uint64_t>(dims[i]);
    if (total > static_cast<uint64_t>(kMaxIdxBytes)) {
      return InvalidArgument("'", path, "' has IDX dims whose product exceeds ", kMaxIdxBytes,
                             " bytes (corrupt header?)");
    }
  }
  *total_bytes = total;
  return dims;
}

// The dims must fit the file before anything is allocated, or a 12-byte file could claim (and
// have us allocate) a gigabyte. Plain input holds exactly its data; deflate inflates at most
// about 1032-fold, so gzip'd input holds at least 1/1032 of it.
Status CheckDataFitsFile(gzFile file, const std::string& path,
                         const std::filesystem::file_status& status, uint64_t header_bytes,
                         uint64_t total) {
  std::error_code error;
  if (status.type() == std::filesystem::file_type::regular) {
    const uint64_t file_bytes = std::filesystem::file_size(path, error);
    if (!error && gzdirect(file) && file_bytes < header_bytes + total) {
      return DataLoss("'", path, "' ends after ", file_bytes - header_bytes, " of the ", total,
                      " data bytes its IDX dims call for (truncated file?)");
    }
    if (!error && !gzdirect(file) && total > kMaxInflateRatio * file_bytes) {
      return DataLoss("'", path, "' is a gzip stream of ", file_bytes,
                      " bytes, which cannot inflate to the ", total,
                      " data bytes its IDX dims call for (truncated or corrupt file?)");
    }
  }
  return Status::OK();
}

}  // namespace

StatusOr<Tensor> ReadIdxFile(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) {
    return NotFound("IDX file '", path, "' does not exist");
  }
  if (status.type() == std::filesystem::file_type::directory) {
    return InvalidArgument("'", path, "' is a directory, not an IDX file");
  }
  GzPtr file(gzopen(path.c_str(), "rb"));
  if (file == nullptr) return Unavailable("cannot open IDX file '", path, "'");

  WEFT_ASSIGN_OR_RETURN(const int rank, ReadIdxMagic(file.get(), path));
  uint64_t total = 0;
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadIdxDims(file.get(), path, rank, &total));
  const uint64_t header_bytes = 4 + 4 * static_cast<uint64_t>(rank);
  WEFT_RETURN_IF_ERROR(CheckDataFitsFile(file.get(), path, status, header_bytes, total));
  Tensor out(DataType::kUInt8, TensorShape(dims));
  WEFT_ASSIGN_OR_RETURN(size_t got, ReadBytes(file.get(), path, out.data<uint8_t>(), total));
  if (got < total) {
    return DataLoss("'", path, "' ends after ", got, " of the ", total,
                    " data bytes its IDX dims call for (truncated file?)");
  }
  uint8_t extra;
  WEFT_ASSIGN_OR_RETURN(got, ReadBytes(file.get(), path, &extra, 1));
  if (got != 0) {
    return InvalidArgument("'", path, "' has bytes after the ", total,
                           " data bytes its IDX dims call for");
  }
  // gzclose tells whether the input ended inside a gzip stream (its trailer cut off, say), which
  // no read reports once the data itself is complete.
  const int closed = gzclose(file.release());
  if (closed == Z_BUF_ERROR) {
    return DataLoss("'", path, "' ends inside its gzip stream (truncated file?)");
  }
  if (closed != Z_OK)
    return DataLoss("cannot read '", path, "' to its end (zlib error ", closed, ")");
  return out;
}

StatusOr<IdxExamples> ReadIdxExamples(const std::string& images_path,
                                      const std::string& labels_path) {
  WEFT_ASSIGN_OR_RETURN(Tensor images, ReadIdxFile(images_path));
  WEFT_ASSIGN_OR_RETURN(Tensor labels, ReadIdxFile(labels_path));
  if (labels.dims() != 1) {
    return InvalidArgument("'", labels_path, "' holds labels of shape ", labels.shape(),
                           "; expected one dimension");
  }
  if (images.dims() < 2) {
    return InvalidArgument("'", images_path, "' holds images of shape ", images.shape(),
                           "; expected [count, ...] with at least two dimensions");
  }
  const int64_t count = images.dim_size(0);
  if (labels.dim_size(0) != count) {
    return InvalidArgument("'", images_path, "' holds ", count, " images but '", labels_path,
                           "' holds ", labels.dim_size(0), " labels");
  }
  const int64_t pixels = count == 0 ? 0 : images.NumElements() / count;
  IdxExamples examples{Tensor(DataType::kFloat, TensorShape({count, pixels})),
                       Tensor(DataType::kInt64, TensorShape({count})), images_path, labels_path};
  const uint8_t* in = images.data<uint8_t>();
  float* out = examples.images.data<float>();
  for (int64_t i = 0; i < images.NumElements(); ++i) out[i] = static_cast<float>(in[i]) / 255.0f;
  const uint8_t* label_in = labels.data<uint8_t>();
  int64_t* label_out = examples.labels.data<int64_t>();
  for (int64_t i = 0; i < count; ++i) label_out[i] = label_in[i];
  return examples;
}

}  // namespace weft::data
