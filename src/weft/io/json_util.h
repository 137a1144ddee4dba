// JSON field helpers shared by the safetensors header and the checkpoint manifest parsers. They
// never throw: each checks the value's type before reading it, and reports a malformed value by
// returning false or nullopt, which the caller turns into a DataLoss naming its file. Templates so
// that both nlohmann::json and nlohmann::ordered_json work. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/core/tensor_shape.h"

namespace weft::io::internal {

// `value` as compact JSON for an error message, cut after `limit` characters (a hostile file may
// hold megabytes in one field). Arrays and objects show as "[...]" and "{...}": dump() recurses,
// and such a file may nest them millions deep.
template <typename Json>
std::string JsonForMessage(const Json& value, size_t limit = 64) {
  if (value.is_array()) return "[...]";
  if (value.is_object()) return "{...}";
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > limit) {
    text.resize(limit);
    text += "...";
  }
  return text;
}

// A non-negative JSON integer; nullopt for anything else (negative, fractional, not a number).
template <typename Json>
std::optional<uint64_t> JsonUint64(const Json& value) {
  if (value.is_number_unsigned()) return value.template get<uint64_t>();
  if (value.is_number_integer()) {
    const int64_t signed_value = value.template get<int64_t>();
    if (signed_value >= 0) return static_cast<uint64_t>(signed_value);
  }
  return std::nullopt;
}

// A shape from a JSON array of non-negative integers whose product fits in int64; false, with the
// reason in `*why`, otherwise.
template <typename Json>
bool JsonShape(const Json& value, TensorShape* shape, std::string* why) {
  if (!value.is_array()) {
    *why = "shape is not a JSON array";
    return false;
  }
  std::vector<int64_t> dims;
  dims.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const std::optional<uint64_t> size = JsonUint64(value[i]);
    if (!size.has_value() || *size > static_cast<uint64_t>(INT64_MAX)) {
      *why = StrCat("dimension ", i, " of the shape (", JsonForMessage(value[i]),
                    ") is not a non-negative integer that fits in int64");
      return false;
    }
    dims.push_back(static_cast<int64_t>(*size));
  }
  StatusOr<TensorShape> created = TensorShape::Create(dims);
  if (!created.ok()) {
    *why = StrCat("bad shape: ", created.status().message());
    return false;
  }
  *shape = std::move(created).value();
  return true;
}

}  // namespace weft::io::internal
