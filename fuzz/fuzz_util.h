// Helpers shared by the libFuzzer targets of fuzz/: a reader that takes fields off the front of a
// fuzz input, and a scratch directory for the readers that only take file paths. Fuzz-only code;
// each target runs inputs on one thread, so none of this is thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <zlib.h>

#include "weft/core/logging.h"
#include "weft/io/durable_file.h"

namespace weft::fuzz {

// Takes fields off the front of the input. Past the end, every Take gives zeros or "" (the input
// simply ran short), so a target never has to check lengths itself.
class InputReader {
 public:
  InputReader(const uint8_t* data, size_t size)
      : rest_(reinterpret_cast<const char*>(data), size) {}

  uint8_t TakeByte() {
    if (rest_.empty()) return 0;
    const uint8_t byte = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return byte;
  }
  // Little-endian, so that a seed's lengths read naturally in a hex dump.
  uint32_t TakeU16() {
    const uint32_t low = TakeByte();
    return low | (uint32_t{TakeByte()} << 8);
  }
  uint32_t TakeU32() {
    const uint32_t low = TakeU16();
    return low | (TakeU16() << 16);
  }
  // Up to `size` bytes (fewer at the end).
  std::string_view TakeBytes(size_t size) {
    const std::string_view taken = rest_.substr(0, size);
    rest_.remove_prefix(taken.size());
    return taken;
  }
  std::string_view TakeRest() { return TakeBytes(rest_.size()); }
  bool empty() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

// `bytes` as a gzip file (what `gzip` writes, and what the IDX reader takes).
inline std::string Gzip(std::string_view bytes) {
  z_stream stream{};
  // windowBits 15 + 16: a gzip header and trailer rather than zlib's.
  WEFT_CHECK(deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                          Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&stream, bytes.size()) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  WEFT_CHECK(deflate(&stream, Z_FINISH) == Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// A directory of this process under $TMPDIR (or /tmp), made on first use and removed when the
// process exits (libFuzzer ends with exit(), which runs static destructors).
class ScratchDir {
 public:
  static const std::string& Path() {
    static ScratchDir dir;
    return dir.path_;
  }
  // Writes `contents` to `name` in the scratch directory (replacing it) and returns its path.
  static std::string Write(const std::string& name, std::string_view contents) {
    const std::string path = io::JoinPath(Path(), name);
    std::FILE* file = std::fopen(path.c_str(), "wb");
    WEFT_CHECK(file != nullptr) << "cannot write " << path;
    const size_t written = std::fwrite(contents.data(), 1, contents.size(), file);
    WEFT_CHECK(std::fclose(file) == 0 && written == contents.size()) << "cannot write " << path;
    return path;
  }

 private:
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    path_ = io::JoinPath(base != nullptr && *base != '\0' ? base : "/tmp", "weft_fuzz.XXXXXX");
    WEFT_CHECK(mkdtemp(path_.data()) != nullptr) << "mkdtemp failed for " << path_;
  }
  ~ScratchDir() { io::RemoveAll(path_).IgnoreError(); }

  std::string path_;
};

}  // namespace weft::fuzz
