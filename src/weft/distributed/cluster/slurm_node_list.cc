#include "weft/distributed/cluster/slurm_node_list.h"

#include <cctype>
#include <charconv>

#include "weft/core/str_util.h"

namespace weft {
namespace {

constexpr size_t kMaxNodes = 65536;

bool AllDigits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// The numbers of one bracket group's body "01-03,07", each as text with its width kept.
Status ExpandGroup(std::string_view body, std::vector<std::string>* numbers) {
  size_t start = 0;
  while (start <= body.size()) {
    size_t end = body.find(',', start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view item = body.substr(start, end - start);
    const size_t dash = item.find('-');
    std::string_view low = item.substr(0, dash);
    std::string_view high = dash == std::string_view::npos ? low : item.substr(dash + 1);
    if (!AllDigits(low) || !AllDigits(high) || low.size() > 9 || high.size() > 9) {
      return InvalidArgument("'", item, "' is not a number or a range lo-hi");
    }
    int from = 0;
    int to = 0;
    std::from_chars(low.data(), low.data() + low.size(), from);
    std::from_chars(high.data(), high.data() + high.size(), to);
    if (to < from) return InvalidArgument("range '", item, "' ends before it starts");
    if (static_cast<size_t>(to - from) >= kMaxNodes) {
      return InvalidArgument("range '", item, "' has more than ", kMaxNodes, " nodes");
    }
    for (int n = from; n <= to; ++n) {
      std::string text = std::to_string(n);
      if (text.size() < low.size()) text.insert(0, low.size() - text.size(), '0');
      numbers->push_back(std::move(text));
    }
    start = end + 1;
  }
  return Status::OK();
}

// Expands one entry ("rack[1-2]-n[1-3]") onto `names`.
Status ExpandEntry(std::string_view entry, std::vector<std::string>* names) {
  if (entry.empty()) return InvalidArgument("an empty host name");
  std::vector<std::string> partial = {""};
  size_t position = 0;
  while (position < entry.size()) {
    const size_t open = entry.find('[', position);
    const size_t close_before = entry.find(']', position);
    if (close_before != std::string_view::npos &&
        (open == std::string_view::npos || close_before < open)) {
      return InvalidArgument("'", entry, "' has a ']' without '['");
    }
    std::string_view text = entry.substr(position, open - position);
    for (std::string& name : partial) name.append(text);
    if (open == std::string_view::npos) break;
    const size_t close = entry.find(']', open);
    if (close == std::string_view::npos)
      return InvalidArgument("'", entry, "' has an unclosed '['");
    std::vector<std::string> numbers;
    Status group = ExpandGroup(entry.substr(open + 1, close - open - 1), &numbers);
    if (!group.ok()) return group.WithContext(StrCat("'", entry, "'"));
    if (partial.size() * numbers.size() > kMaxNodes) {
      return InvalidArgument("'", entry, "' names more than ", kMaxNodes, " nodes");
    }
    std::vector<std::string> next;
    for (const std::string& prefix : partial) {
      for (const std::string& number : numbers) next.push_back(prefix + number);
    }
    partial = std::move(next);
    position = close + 1;
  }
  for (std::string& name : partial) names->push_back(std::move(name));
  return Status::OK();
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandSlurmNodeList(std::string_view node_list) {
  std::vector<std::string> names;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= node_list.size(); ++i) {
    const char c = i < node_list.size() ? node_list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1) {
      return InvalidArgument("node list '", node_list, "' has unbalanced brackets");
    }
    if (c != ',' || depth != 0) continue;
    Status entry = ExpandEntry(node_list.substr(start, i - start), &names);
    if (!entry.ok()) return entry.WithContext(StrCat("node list '", node_list, "'"));
    if (names.size() > kMaxNodes) {
      return InvalidArgument("node list '", node_list, "' names more than ", kMaxNodes, " nodes");
    }
    start = i + 1;
  }
  if (depth != 0) return InvalidArgument("node list '", node_list, "' has an unclosed '['");
  return names;
}

}  // namespace weft
