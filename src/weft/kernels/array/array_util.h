// Helpers shared by the array kernels: error messages that name the node, reading int32/int64
// index inputs (shapes, perms, axes), the dtypes the data-moving kernels serve, and dispatch on
// element size for kernels that only move bytes. Stateless; safe from any thread.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "weft/framework/node_def_util.h"
#include "weft/framework/op_kernel.h"

namespace weft::kernels::array {

// Tensors at least this large are processed on the intra-op threads; smaller ones inline.
inline constexpr int64_t kMinParallelElements = 32 * 1024;

// InvalidArgument "node 'x' (Op): <message>".
template <typename... Args>
Status NodeError(const OpKernel& kernel, Args&&... args) {
  return InvalidArgument(FormatNodeForError(kernel.def()), ": ", std::forward<Args>(args)...);
}

// The dtypes of every data-moving array kernel.
inline std::vector<DataType> ArrayDataTypes() {
  return {DataType::kFloat, DataType::kDouble, DataType::kInt32,   DataType::kInt64,
          DataType::kUInt8, DataType::kBool,   DataType::kBFloat16};
}

// Reads the int32 or int64 index input `t` as int64 values. It must be a vector; a scalar is
// also accepted when `allow_scalar`. `what` names the input in the error.
Status ReadIndices(const OpKernel& kernel, const Tensor& t, std::string_view what,
                   std::vector<int64_t>* values, bool allow_scalar = false);

// Calls fn.template operator()<U>() with an unsigned integer type as wide as one element of
// `type` (1, 2, 4 or 8 bytes), for kernels that copy elements without looking at them.
template <typename Fn>
void VisitByElementSize(DataType type, Fn&& fn) {
  switch (DataTypeSize(type)) {
    case 1:
      fn.template operator()<uint8_t>();
      break;
    case 2:
      fn.template operator()<uint16_t>();
      break;
    case 4:
      fn.template operator()<uint32_t>();
      break;
    default:
      WEFT_CHECK(DataTypeSize(type) == 8) << "no element-size dispatch for " << DataTypeName(type);
      fn.template operator()<uint64_t>();
      break;
  }
}

// Typed element pointers that ignore the dtype check (the caller picked U by element size).
template <typename U>
const U* ElementsAs(const Tensor& t) {
  return static_cast<const U*>(t.raw_data());
}
template <typename U>
U* ElementsAs(Tensor& t) {
  return static_cast<U*>(t.raw_data());
}

}  // namespace weft::kernels::array
