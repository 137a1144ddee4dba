// libFuzzer target: the IDX reader (data/idx.h), which parses the dataset files users download,
// plain or gzip'd.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"

#include "weft/core/logging.h"
#include "weft/data/idx.h"

namespace weft::fuzz {
namespace {

std::string File(const std::string& name, std::string_view bytes, bool gzip) {
  return ScratchDir::Write(name, gzip ? Gzip(bytes) : std::string(bytes));
}

}  // namespace
}  // namespace weft::fuzz

// Input: one mode byte (bit 0: ReadIdxExamples, else ReadIdxFile; bit 1: the harness gzips each
// file first, so that the IDX parser behind zlib sees structured bytes), then for ReadIdxExamples a
// little-endian uint16 length of the image file, the image file and the label file; else the one
// file. Without bit 1 gzip input is taken as it is, which exercises zlib's framing.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::fuzz::InputReader input(data, size);
  const uint8_t mode = input.TakeByte();
  const bool examples = (mode & 1) != 0;
  const bool gzip = (mode & 2) != 0;
  if (!examples) {
    const std::string path = weft::fuzz::File("one.idx", input.TakeRest(), gzip);
    weft::StatusOr<weft::Tensor> tensor = weft::data::ReadIdxFile(path);
    WEFT_CHECK(!tensor.ok() || tensor->dims() >= 1);
    return 0;
  }
  const uint32_t image_bytes = input.TakeU16();
  const std::string images = weft::fuzz::File("images.idx", input.TakeBytes(image_bytes), gzip);
  const std::string labels = weft::fuzz::File("labels.idx", input.TakeRest(), gzip);
  weft::StatusOr<weft::data::IdxExamples> read = weft::data::ReadIdxExamples(images, labels);
  if (read.ok()) {
    WEFT_CHECK(read->images.dim_size(0) == read->size() && read->labels.dims() == 1);
  }
  return 0;
}
