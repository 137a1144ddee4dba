// DataType: the element types a Tensor can hold, with their sizes, names and the mapping between
// C++ types and enum values. The numeric values match proto/weft/types.proto so conversion is a
// cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "weft/core/bfloat16.h"

namespace weft {

enum class DataType : int {
  kInvalid = 0,
  kFloat = 1,
  kDouble = 2,
  kInt32 = 3,
  kUInt8 = 4,
  kInt64 = 9,
  kBool = 10,
  kBFloat16 = 14,  // weft::bfloat16 (bfloat16.h)
  kResource = 20,  // a handle to a per-device resource such as a variable
};

// Bytes per element; 0 for kInvalid.
size_t DataTypeSize(DataType type);
// "float32", "float64", "int32", "uint8", "int64", "bool", "bfloat16", "resource", "invalid".
std::string_view DataTypeName(DataType type);
// Parses a DataTypeName (also accepts "float", "double" and "bf16"); kInvalid when unknown.
DataType DataTypeFromName(std::string_view name);
bool IsValidDataType(int value);

// Maps a C++ element type to its DataType: DataTypeToEnum<float>::value == DataType::kFloat.
template <typename T>
struct DataTypeToEnum;
template <>
struct DataTypeToEnum<float> {
  static constexpr DataType value = DataType::kFloat;
};
template <>
struct DataTypeToEnum<double> {
  static constexpr DataType value = DataType::kDouble;
};
template <>
struct DataTypeToEnum<int32_t> {
  static constexpr DataType value = DataType::kInt32;
};
template <>
struct DataTypeToEnum<uint8_t> {
  static constexpr DataType value = DataType::kUInt8;
};
template <>
struct DataTypeToEnum<int64_t> {
  static constexpr DataType value = DataType::kInt64;
};
template <>
struct DataTypeToEnum<bool> {
  static constexpr DataType value = DataType::kBool;
};
template <>
struct DataTypeToEnum<bfloat16> {
  static constexpr DataType value = DataType::kBFloat16;
};

// Calls fn.template operator()<T>() with the C++ type for `type`; returns false for types without
// a numeric C++ type (kInvalid, kResource). Lets kernels dispatch on dtype in one place. `fn` must
// compile for weft::bfloat16 too, which converts only explicitly (static_cast to and from float32,
// and through it to any arithmetic type) and has no arithmetic of its own.
template <typename Fn>
bool VisitNumericType(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat:
      fn.template operator()<float>();
      return true;
    case DataType::kDouble:
      fn.template operator()<double>();
      return true;
    case DataType::kInt32:
      fn.template operator()<int32_t>();
      return true;
    case DataType::kUInt8:
      fn.template operator()<uint8_t>();
      return true;
    case DataType::kInt64:
      fn.template operator()<int64_t>();
      return true;
    case DataType::kBool:
      fn.template operator()<bool>();
      return true;
    case DataType::kBFloat16:
      fn.template operator()<bfloat16>();
      return true;
    default:
      return false;
  }
}

}  // namespace weft
