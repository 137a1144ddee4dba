// Plain and gzip ByteReaders. Gzip input is inflated with zlib's inflate() straight into the
// caller's buffer, so a reader holds only one input chunk however large the file is.
#include "weft/train/data/byte_reader.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include <zlib.h>

namespace weft::train {
namespace {

constexpr uint8_t kGzipMagic0 = 0x1f;
constexpr uint8_t kGzipMagic1 = 0x8b;
// Compressed bytes read from the file per refill.
constexpr size_t kInputChunkBytes = size_t{1} << 18;

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

// Reads up to `size` bytes; fewer only at end of file.
StatusOr<size_t> ReadFromFile(std::FILE* file, const std::string& path, uint8_t* out, size_t size) {
  size_t got = std::fread(out, 1, size, file);
  if (got < size && std::ferror(file)) {
    return Unavailable("error reading '", path, "': ", std::generic_category().message(errno));
  }
  return got;
}

// Serves the bytes peeked while sniffing the format, then the rest of the file.
class PlainReader final : public ByteReader {
 public:
  PlainReader(std::string path, FilePtr file, std::vector<uint8_t> peeked)
      : path_(std::move(path)), file_(std::move(file)), peeked_(std::move(peeked)) {}

  StatusOr<size_t> Read(uint8_t* out, size_t size) override {
    size_t from_peeked = std::min(size, peeked_.size() - peeked_used_);
    std::copy_n(peeked_.data() + peeked_used_, from_peeked, out);
    peeked_used_ += from_peeked;
    if (from_peeked == size) return size;
    WEFT_ASSIGN_OR_RETURN(size_t got,
                          ReadFromFile(file_.get(), path_, out + from_peeked, size - from_peeked));
    return from_peeked + got;
  }
  bool compressed() const override { return false; }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  FilePtr file_;
  std::vector<uint8_t> peeked_;
  size_t peeked_used_ = 0;
};

class GzipReader final : public ByteReader {
 public:
  // `peeked` holds the first bytes of the file, already read.
  static StatusOr<std::unique_ptr<ByteReader>> Create(std::string path, FilePtr file,
                                                      std::vector<uint8_t> peeked) {
    auto reader = std::unique_ptr<GzipReader>(new GzipReader(std::move(path), std::move(file)));
    // 16 + MAX_WBITS: accept only the gzip wrapper, and check its CRC-32 and length trailer.
    int rc = inflateInit2(&reader->stream_, 16 + MAX_WBITS);
    if (rc != Z_OK) {
      return ResourceExhausted("cannot start inflating '", reader->path_, "': zlib error ", rc);
    }
    reader->initialized_ = true;
    std::copy(peeked.begin(), peeked.end(), reader->input_.begin());
    reader->stream_.next_in = reader->input_.data();
    reader->stream_.avail_in = static_cast<uInt>(peeked.size());
    return std::unique_ptr<ByteReader>(std::move(reader));
  }

  ~GzipReader() override {
    if (initialized_) inflateEnd(&stream_);
  }

  StatusOr<size_t> Read(uint8_t* out, size_t size) override {
    WEFT_RETURN_IF_ERROR(error_);
    size_t filled = 0;
    while (filled < size && !finished_) {
      Status status = Step(out + filled, size - filled, &filled);
      if (!status.ok()) {
        error_ = status;
        return status;
      }
    }
    return filled;
  }
  bool compressed() const override { return true; }
  const std::string& path() const override { return path_; }

 private:
  GzipReader(std::string path, FilePtr file)
      : path_(std::move(path)), file_(std::move(file)), input_(kInputChunkBytes) {}

  // Runs inflate once into out[0, size), adding the bytes produced to *filled.
  Status Step(uint8_t* out, size_t size, size_t* filled) {
    if (stream_.avail_in == 0 && !input_ended_) WEFT_RETURN_IF_ERROR(Refill());
    if (member_ended_) {
      if (stream_.avail_in == 0) {
        finished_ = true;
        return Status::OK();
      }
      if (stream_.next_in[0] != kGzipMagic0) {
        return DataLoss("'", path_, "' has trailing bytes after its gzip stream (at ",
                        compressed_offset(), " compressed bytes)");
      }
      // Another gzip member follows; its bytes continue the same stream.
      inflateReset(&stream_);
      member_ended_ = false;
    }
    stream_.next_out = out;
    stream_.avail_out = static_cast<uInt>(std::min<size_t>(size, UINT_MAX));
    uInt before = stream_.avail_out;
    int rc = inflate(&stream_, Z_NO_FLUSH);
    size_t produced = before - stream_.avail_out;
    *filled += produced;
    inflated_ += produced;
    switch (rc) {
      case Z_OK:
        return Status::OK();
      case Z_STREAM_END:
        member_ended_ = true;
        return Status::OK();
      case Z_BUF_ERROR:
        // No progress though the output has room: the input ran out mid-member.
        if (stream_.avail_in == 0 && !input_ended_) return Status::OK();  // refilled next step
        return DataLoss("gzip stream in '", path_, "' is cut off after ", inflated_,
                        " inflated bytes (truncated file?)");
      case Z_MEM_ERROR:
        return ResourceExhausted("out of memory inflating '", path_, "'");
      default:  // Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR
        return DataLoss("corrupt gzip stream in '", path_, "' after ", inflated_,
                        " inflated bytes: ", stream_.msg != nullptr ? stream_.msg : "zlib error");
    }
  }

  Status Refill() {
    WEFT_ASSIGN_OR_RETURN(size_t got,
                          ReadFromFile(file_.get(), path_, input_.data(), input_.size()));
    consumed_before_ += stream_.next_in == nullptr ? 0 : stream_.next_in - input_.data();
    stream_.next_in = input_.data();
    stream_.avail_in = static_cast<uInt>(got);
    if (got < input_.size()) input_ended_ = true;
    return Status::OK();
  }

  // Compressed bytes consumed so far.
  size_t compressed_offset() const {
    return consumed_before_ + static_cast<size_t>(stream_.next_in - input_.data());
  }

  std::string path_;
  FilePtr file_;
  std::vector<uint8_t> input_;
  z_stream stream_{};
  bool initialized_ = false;
  bool input_ended_ = false;   // the file has no more compressed bytes
  bool member_ended_ = false;  // inflate finished a gzip member
  bool finished_ = false;      // every member read; Read returns 0 from now on
  size_t inflated_ = 0;
  size_t consumed_before_ = 0;  // compressed bytes consumed before the current chunk
  Status error_;                // sticky: once corrupt, always corrupt
};

}  // namespace

StatusOr<std::unique_ptr<ByteReader>> OpenByteReader(const std::string& path) {
  std::error_code error;
  std::filesystem::file_status status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) {
    return NotFound("file '", path, "' does not exist");
  }
  if (status.type() == std::filesystem::file_type::directory) {
    return InvalidArgument("'", path, "' is a directory, not a data file");
  }
  FilePtr file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) {
    int err = errno;
    std::string reason = std::generic_category().message(err);
    if (err == ENOENT) return NotFound("cannot open '", path, "': ", reason);
    if (err == EACCES) return PermissionDenied("cannot open '", path, "': ", reason);
    return Unavailable("cannot open '", path, "': ", reason);
  }
  std::vector<uint8_t> peeked(2);
  WEFT_ASSIGN_OR_RETURN(size_t got, ReadFromFile(file.get(), path, peeked.data(), peeked.size()));
  peeked.resize(got);
  if (got == 2 && peeked[0] == kGzipMagic0 && peeked[1] == kGzipMagic1) {
    return GzipReader::Create(path, std::move(file), std::move(peeked));
  }
  return std::unique_ptr<ByteReader>(
      std::make_unique<PlainReader>(path, std::move(file), std::move(peeked)));
}

}  // namespace weft::train
