#include "weft/data/text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <system_error>
#include <vector>

#include "weft/core/str_util.h"

namespace weft::data {
namespace {

// The window starting at `offset`: its bytes as inputs, the next bytes as targets.
Element Window(const std::string& text, int64_t offset, int64_t context) {
  Tensor inputs(DataType::kInt32, TensorShape({context}));
  Tensor targets(DataType::kInt32, TensorShape({context}));
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data()) + offset;
  for (int64_t i = 0; i < context; ++i) {
    inputs.data<int32_t>()[i] = bytes[i];
    targets.data<int32_t>()[i] = bytes[i + 1];
  }
  return {std::move(inputs), std::move(targets)};
}

// The dataset of windows `count`, each made by `make(index)` when asked for, or `error` at the
// first GetNext.
Dataset WindowsOf(int64_t count, Status error, std::function<Element(int64_t index)> make) {
  Tensor indices(DataType::kInt64, TensorShape({error.ok() ? count : 1}));
  for (int64_t i = 0; i < indices.NumElements(); ++i) indices.data<int64_t>()[i] = i;
  return Dataset::FromTensors({std::move(indices)})
      .Map([error, make = std::move(make)](Element index) -> StatusOr<Element> {
        WEFT_RETURN_IF_ERROR(error);
        return make(index[0].data<int64_t>()[0]);
      });
}

Status CheckWindows(const std::shared_ptr<const std::string>& text, int64_t context,
                    int64_t count) {
  if (text == nullptr) return InvalidArgument("byte windows: no text");
  if (context <= 0 || count <= 0) {
    return InvalidArgument("byte windows: context (", context, ") and count (", count,
                           ") must be positive");
  }
  if (static_cast<int64_t>(text->size()) < context + 1) {
    return InvalidArgument("byte windows: a text of ", text->size(),
                           " bytes is too short for a window of ", context,
                           " bytes and its next byte");
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::string> ReadTextCorpus(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return NotFound("text corpus: no directory ", dir,
                    dir == kDefaultFortunesDir ? " (Debian's package `fortunes` provides it)" : "");
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const fs::path& path = it->path();
    if (it->is_regular_file() && !it->is_symlink() &&
        path.filename().string().find('.') == std::string::npos) {
      files.push_back(path);
    }
  }
  if (error) return Unavailable("text corpus: cannot list ", dir, ": ", error.message());
  std::sort(files.begin(), files.end());
  std::string text;
  for (const fs::path& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Unavailable("text corpus: cannot read ", path.string());
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) return Unavailable("text corpus: error reading ", path.string());
  }
  if (text.empty()) {
    return InvalidArgument("text corpus: ", dir, " holds no text (", files.size(),
                           " files without an extension, all empty)");
  }
  return text;
}

StatusOr<TextSplit> SplitText(std::string text, double held_out, int64_t min_part_bytes) {
  if (!(held_out > 0 && held_out < 1)) {
    return InvalidArgument("text split: held_out must be in (0, 1), got ", held_out);
  }
  const auto size = static_cast<int64_t>(text.size());
  const auto validation_bytes = static_cast<int64_t>(static_cast<double>(size) * held_out);
  const int64_t train_bytes = size - validation_bytes;
  if (train_bytes < min_part_bytes || validation_bytes < min_part_bytes) {
    return InvalidArgument("text split: ", size, " bytes give parts of ", train_bytes, " and ",
                           validation_bytes, " bytes, each needs at least ", min_part_bytes);
  }
  TextSplit split;
  split.validation = std::make_shared<const std::string>(text.substr(train_bytes));
  text.resize(train_bytes);
  split.train = std::make_shared<const std::string>(std::move(text));
  return split;
}

Dataset RandomByteWindows(std::shared_ptr<const std::string> text, int64_t context, int64_t count,
                          uint64_t seed) {
  Status valid = CheckWindows(text, context, count);
  return WindowsOf(count, valid, [text, context, seed](int64_t index) {
    // One generator per window, seeded from the window's index: any window can be made alone.
    std::seed_seq sequence{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                           static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32)};
    std::mt19937_64 generator(sequence);
    std::uniform_int_distribution<int64_t> offset(0,
                                                  static_cast<int64_t>(text->size()) - context - 1);
    return Window(*text, offset(generator), context);
  });
}

Dataset ConsecutiveByteWindows(std::shared_ptr<const std::string> text, int64_t context,
                               int64_t count) {
  Status valid = CheckWindows(text, context, count);
  if (valid.ok()) {
    count = std::min<int64_t>(count, (static_cast<int64_t>(text->size()) - 1) / context);
  }
  return WindowsOf(count, valid, [text, context](int64_t index) {
    return Window(*text, index * context, context);
  });
}

}  // namespace weft::data
