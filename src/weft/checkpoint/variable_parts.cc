#include "weft/checkpoint/variable_parts.h"

#include <map>
#include <optional>
#include <set>

namespace weft::checkpoint {
namespace {

struct PartName {
  std::string whole;
  int64_t index = 0;
};

// "<whole>/part_<i>[/<slot>]" -> {"<whole>[/<slot>]", i}; the last "/part_<digits>" component
// counts.
std::optional<PartName> ParsePartName(const std::string& name) {
  constexpr std::string_view kPart = "/part_";
  for (size_t at = name.rfind(kPart); at != std::string::npos && at > 0;
       at = name.rfind(kPart, at - 1)) {
    size_t end = at + kPart.size();
    while (end < name.size() && end - (at + kPart.size()) < 9 && name[end] >= '0' &&
           name[end] <= '9') {
      ++end;
    }
    const size_t digits = end - (at + kPart.size());
    if (digits == 0 || (end < name.size() && name[end] != '/')) continue;
    // No leading zeros: "part_01" is not part 1.
    if (digits > 1 && name[at + kPart.size()] == '0') continue;
    return PartName{name.substr(0, at) + name.substr(end),
                    std::stoll(name.substr(at + kPart.size(), digits))};
  }
  return std::nullopt;
}

}  // namespace

std::vector<ops::RestorePart> FindVariableParts(const std::vector<NamedVariable>& variables) {
  std::vector<ops::RestorePart> parts(variables.size());
  std::set<std::string> names;
  for (const NamedVariable& variable : variables) names.insert(variable.name);
  // Whole name -> part index -> variable.
  std::map<std::string, std::map<int64_t, size_t>> wholes;
  for (size_t v = 0; v < variables.size(); ++v) {
    if (variables[v].shape.dims() < 1) continue;
    std::optional<PartName> part = ParsePartName(variables[v].name);
    if (part.has_value()) wholes[part->whole][part->index] = v;
  }
  for (const auto& [whole, by_index] : wholes) {
    if (names.contains(whole)) continue;
    const NamedVariable& first = variables[by_index.begin()->second];
    bool valid = by_index.rbegin()->first == static_cast<int64_t>(by_index.size()) - 1;
    int64_t rows = 0;
    for (const auto& [index, v] : by_index) {
      const NamedVariable& variable = variables[v];
      valid = valid && variable.dtype == first.dtype && variable.shape.dims() == first.shape.dims();
      for (int d = 1; valid && d < variable.shape.dims(); ++d) {
        valid = variable.shape.dim_size(d) == first.shape.dim_size(d);
      }
      rows += variable.shape.dim_size(0);
    }
    if (!valid) continue;
    int64_t offset = 0;
    for (const auto& [index, v] : by_index) {
      parts[v] = {whole, rows, offset};
      offset += variables[v].shape.dim_size(0);
    }
  }
  return parts;
}

}  // namespace weft::checkpoint
