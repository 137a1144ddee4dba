// ReadIdxFile: parses the IDX header, validates it, then reads the payload through a ByteReader.
#include "weft/train/data/idx_reader.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string_view>

#include "weft/core/str_util.h"
#include "weft/train/data/byte_reader.h"

namespace weft::train {
namespace {

constexpr uint8_t kUnsignedByteCode = 0x08;
// Up to this many payload bytes are reserved (not touched) as soon as the header is read; beyond
// it the buffer grows only as bytes actually arrive, so a lying header cannot make us use much.
constexpr size_t kMaxEagerReserveBytes = size_t{64} << 20;
// The payload is read in steps of this size.
constexpr size_t kReadStepBytes = size_t{1} << 20;

// The IDX names of the dtype codes the format defines; empty for unknown codes.
std::string_view IdxTypeName(uint8_t code) {
  switch (code) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "";
  }
}

std::string Hex(const uint8_t* bytes, size_t count) {
  std::string out = "0x";
  char digits[3];
  for (size_t i = 0; i < count; ++i) {
    std::snprintf(digits, sizeof(digits), "%02x", bytes[i]);
    out += digits;
  }
  return out;
}

uint32_t BigEndian32(const uint8_t* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         uint32_t{bytes[3]};
}

// Reads and checks the 4-byte magic; returns the rank it announces.
StatusOr<int> ReadMagic(ByteReader& reader) {
  const std::string& path = reader.path();
  uint8_t magic[4];
  WEFT_ASSIGN_OR_RETURN(size_t got, reader.Read(magic, sizeof(magic)));
  bool zero_prefix =
      std::all_of(magic, magic + std::min<size_t>(got, 2), [](uint8_t b) { return b == 0; });
  if (got < sizeof(magic)) {
    if (got > 0 && zero_prefix) {
      return DataLoss("'", path, "' ends after ", got, " bytes, inside its 4-byte IDX magic");
    }
    return InvalidArgument("'", path, "' is not an IDX file: it holds only ", got, " bytes");
  }
  if (!zero_prefix) {
    return InvalidArgument("'", path, "' is not an IDX file: its magic ", Hex(magic, 4),
                           " does not start with two zero bytes");
  }
  uint8_t code = magic[2];
  if (code != kUnsignedByteCode) {
    std::string_view name = IdxTypeName(code);
    if (name.empty()) {
      return InvalidArgument("'", path, "' is not an IDX file: unknown dtype code ", Hex(&code, 1),
                             " in magic ", Hex(magic, 4));
    }
    return Unimplemented("'", path, "' holds IDX dtype ", name, " (code ", Hex(&code, 1),
                         "); only unsigned byte (0x08) is supported");
  }
  int rank = magic[3];
  if (rank == 0 || rank > kMaxIdxRank) {
    return InvalidArgument("'", path, "' has IDX rank ", rank, "; expected 1 to ", kMaxIdxRank);
  }
  return rank;
}

// Reads `rank` dimensions and checks their product against kMaxIdxBytes.
StatusOr<std::vector<int64_t>> ReadDims(ByteReader& reader, int rank) {
  uint8_t bytes[4 * kMaxIdxRank];
  size_t want = 4 * static_cast<size_t>(rank);
  WEFT_ASSIGN_OR_RETURN(size_t got, reader.Read(bytes, want));
  if (got < want) {
    return DataLoss("'", reader.path(), "' ends inside its IDX header: ", got, " of the ", want,
                    " dimension bytes for rank ", rank);
  }
  std::vector<int64_t> dims(rank);
  uint64_t product = 1;
  bool too_large = false;
  for (int i = 0; i < rank; ++i) {
    dims[i] = BigEndian32(bytes + 4 * i);
    // product <= 2^30 before each step and dims < 2^32, so this cannot overflow.
    product *= static_cast<uint64_t>(dims[i]);
    if (product > static_cast<uint64_t>(kMaxIdxBytes)) too_large = true;
  }
  if (too_large) {
    return InvalidArgument("'", reader.path(), "' has IDX dims [", StrJoin(dims, ","),
                           "] whose product exceeds the ", kMaxIdxBytes,
                           "-byte limit (corrupt header?)");
  }
  return dims;
}

}  // namespace

int64_t IdxArray::NumElements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string IdxArray::DimsString() const { return StrCat("[", StrJoin(dims, ","), "]"); }

StatusOr<IdxArray> ReadIdxFile(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<ByteReader> reader, OpenByteReader(path));
  WEFT_ASSIGN_OR_RETURN(int rank, ReadMagic(*reader));
  IdxArray array;
  WEFT_ASSIGN_OR_RETURN(array.dims, ReadDims(*reader, rank));
  const size_t total = static_cast<size_t>(array.NumElements());
  array.data.reserve(std::min(total, kMaxEagerReserveBytes));
  size_t filled = 0;
  while (filled < total) {
    // Grow a step at a time so that only bytes about to be read get zero-filled.
    const size_t target = std::min(total, filled + kReadStepBytes);
    array.data.resize(target);
    WEFT_ASSIGN_OR_RETURN(size_t got, reader->Read(array.data.data() + filled, target - filled));
    filled += got;
    if (filled < target) {
      return DataLoss("'", path, "' ends after ", filled, " of the ", total,
                      " data bytes its IDX dims ", array.DimsString(),
                      " call for (truncated file?)");
    }
  }
  // Reading past the payload also drives a gzip stream to its end, which verifies its checksum.
  uint8_t extra;
  WEFT_ASSIGN_OR_RETURN(size_t extra_count, reader->Read(&extra, 1));
  if (extra_count != 0) {
    return InvalidArgument("'", path, "' has bytes after the ", total, " data bytes its IDX dims ",
                           array.DimsString(), " call for (trailing garbage)");
  }
  return array;
}

}  // namespace weft::train
