// Reading of int32/int64 index inputs for the array kernels (see array_util.h).
#include "weft/kernels/array/array_util.h"

#include <algorithm>

namespace weft::kernels::array {

Status ReadIndices(const OpKernel& kernel, const Tensor& t, std::string_view what,
                   std::vector<int64_t>* values, bool allow_scalar) {
  if (t.dims() != 1 && !(allow_scalar && t.dims() == 0)) {
    return NodeError(kernel, what, " must be a ", allow_scalar ? "scalar or " : "",
                     "vector, but has shape ", t.shape());
  }
  values->resize(static_cast<size_t>(t.NumElements()));
  if (t.dtype() == DataType::kInt32) {
    std::copy_n(t.data<int32_t>(), values->size(), values->begin());
  } else if (t.dtype() == DataType::kInt64) {
    std::copy_n(t.data<int64_t>(), values->size(), values->begin());
  } else {
    return NodeError(kernel, what, " must be int32 or int64, but is ", DataTypeName(t.dtype()));
  }
  return Status::OK();
}

}  // namespace weft::kernels::array
