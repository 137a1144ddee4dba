// String helpers used across Weft: StrCat for building messages, StrJoin for lists.
// Stateless; safe from any thread.
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace weft {

// Concatenates any streamable values: StrCat("node '", name, "' has ", n, " inputs").
template <typename... Args>
std::string StrCat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

// Joins the elements of a range with a separator, streaming each element.
template <typename Range>
std::string StrJoin(const Range& range, std::string_view separator) {
  std::ostringstream out;
  bool first = true;
  for (const auto& item : range) {
    if (!first) out << separator;
    out << item;
    first = false;
  }
  return out.str();
}

}  // namespace weft
