#include "weft/core/dtype.h"

namespace weft {

size_t DataTypeSize(DataType type) {
  switch (type) {
    case DataType::kFloat:
      return 4;
    case DataType::kDouble:
      return 8;
    case DataType::kInt32:
      return 4;
    case DataType::kUInt8:
      return 1;
    case DataType::kInt64:
      return 8;
    case DataType::kBool:
      return 1;
    case DataType::kBFloat16:
      return 2;
    case DataType::kResource:
      return 8;
    case DataType::kInvalid:
      return 0;
  }
  return 0;
}

std::string_view DataTypeName(DataType type) {
  switch (type) {
    case DataType::kFloat:
      return "float32";
    case DataType::kDouble:
      return "float64";
    case DataType::kInt32:
      return "int32";
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt64:
      return "int64";
    case DataType::kBool:
      return "bool";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kResource:
      return "resource";
    case DataType::kInvalid:
      return "invalid";
  }
  return "invalid";
}

DataType DataTypeFromName(std::string_view name) {
  for (DataType type :
       {DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kUInt8, DataType::kInt64,
        DataType::kBool, DataType::kBFloat16, DataType::kResource}) {
    if (name == DataTypeName(type)) return type;
  }
  if (name == "float") return DataType::kFloat;
  if (name == "double") return DataType::kDouble;
  if (name == "bf16") return DataType::kBFloat16;
  return DataType::kInvalid;
}

bool IsValidDataType(int value) {
  switch (static_cast<DataType>(value)) {
    case DataType::kFloat:
    case DataType::kDouble:
    case DataType::kInt32:
    case DataType::kUInt8:
    case DataType::kInt64:
    case DataType::kBool:
    case DataType::kBFloat16:
    case DataType::kResource:
      return true;
    case DataType::kInvalid:
      return false;
  }
  return false;
}

}  // namespace weft
