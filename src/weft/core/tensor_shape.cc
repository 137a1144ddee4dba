#include "weft/core/tensor_shape.h"

#include <limits>

namespace weft {

TensorShape::TensorShape(std::initializer_list<int64_t> dims) : TensorShape(std::vector(dims)) {}

TensorShape::TensorShape(std::vector<int64_t> dims) : dims_(std::move(dims)) {
  for (int64_t d : dims_) WEFT_CHECK(d >= 0) << "negative dimension " << d;
  Recompute();
}

StatusOr<TensorShape> TensorShape::Create(std::span<const int64_t> dims) {
  int64_t count = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return InvalidArgument("dimension ", i, " of a shape is negative (", dims[i], ")");
    }
    if (dims[i] != 0 && count > std::numeric_limits<int64_t>::max() / dims[i]) {
      return InvalidArgument(
          "shape has too many elements: the product of its dimensions overflows");
    }
    count *= dims[i];
  }
  return TensorShape(std::vector<int64_t>(dims.begin(), dims.end()));
}

void TensorShape::AddDim(int64_t size) {
  WEFT_CHECK(size >= 0);
  dims_.push_back(size);
  Recompute();
}

void TensorShape::set_dim(int i, int64_t size) {
  WEFT_CHECK(size >= 0 && i >= 0 && i < dims());
  dims_[i] = size;
  Recompute();
}

void TensorShape::RemoveDim(int i) {
  WEFT_CHECK(i >= 0 && i < dims());
  dims_.erase(dims_.begin() + i);
  Recompute();
}

std::string TensorShape::DebugString() const { return StrCat("[", StrJoin(dims_, ","), "]"); }

void TensorShape::Recompute() {
  num_elements_ = 1;
  for (int64_t d : dims_) num_elements_ *= d;
}

std::ostream& operator<<(std::ostream& out, const TensorShape& shape) {
  return out << shape.DebugString();
}

}  // namespace weft
