// Byte-level text for language models (workload W6): a corpus read from a directory of plain text
// files, split into a training part and a held-out part, and datasets of byte windows over them
// (a byte is a token, vocabulary 256). Windows are (inputs, targets) int32 [context] each, the
// targets being the inputs shifted by one byte. Stateless functions; the datasets share the text
// read-only, so they may be iterated from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "weft/core/statusor.h"
#include "weft/data/dataset.h"

namespace weft::data {

// W6's corpus: Debian's `fortunes` package.
inline constexpr char kDefaultFortunesDir[] = "/usr/share/games/fortunes";

// Every regular file of `dir` whose name has no extension (no '.'), sorted by name, concatenated.
// NotFound naming the directory (and the package that provides the default one) when it is
// missing; InvalidArgument naming it when no such file holds any text; a file that cannot be read
// is named.
StatusOr<std::string> ReadTextCorpus(const std::string& dir = kDefaultFortunesDir);

struct TextSplit {
  std::shared_ptr<const std::string> train;
  std::shared_ptr<const std::string> validation;  // the last `held_out` share of the text
};
// InvalidArgument unless held_out is in (0, 1) and both parts hold at least `min_part_bytes`.
StatusOr<TextSplit> SplitText(std::string text, double held_out, int64_t min_part_bytes);

// `count` windows at offsets drawn uniformly from [0, size - context - 1] by a generator seeded
// from (`seed`, the window's index): window i is the same in every run and every process, so a
// sharded or resumed pipeline sees the same windows. InvalidArgument (at the first GetNext) when
// the text is shorter than context + 1 bytes or context or count is not positive.
Dataset RandomByteWindows(std::shared_ptr<const std::string> text, int64_t context, int64_t count,
                          uint64_t seed);
// The first `count` consecutive windows (offsets 0, context, 2 * context, ...), fewer when the
// text ends first (the last target byte must exist).
Dataset ConsecutiveByteWindows(std::shared_ptr<const std::string> text, int64_t context,
                               int64_t count);

}  // namespace weft::data
