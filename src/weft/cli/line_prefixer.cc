#include "weft/cli/line_prefixer.h"

namespace weft::cli {

std::string LinePrefixer::Feed(std::string_view bytes) {
  std::string out;
  while (!bytes.empty()) {
    const size_t room = kMaxLineBytes - partial_.size();
    const size_t newline = bytes.find('\n');
    if (newline != std::string_view::npos && newline <= room) {
      out.append(prefix_).append(partial_).append(bytes.substr(0, newline + 1));
      partial_.clear();
      bytes.remove_prefix(newline + 1);
    } else if (bytes.size() < room) {
      partial_.append(bytes);
      bytes = {};
    } else {  // the line reaches the limit: cut it there
      out.append(prefix_).append(partial_).append(bytes.substr(0, room)).push_back('\n');
      partial_.clear();
      bytes.remove_prefix(room);
    }
  }
  return out;
}

std::string LinePrefixer::Finish() {
  if (partial_.empty()) return "";
  std::string out = prefix_ + partial_ + "\n";
  partial_.clear();
  return out;
}

}  // namespace weft::cli
