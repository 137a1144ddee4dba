#include "weft/framework/partial_shape.h"

namespace weft {

bool PartialShape::IsFullyDefined() const {
  if (!known_rank_) return false;
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

int64_t PartialShape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

TensorShape PartialShape::ToTensorShape() const {
  WEFT_CHECK(IsFullyDefined()) << DebugString();
  return TensorShape(dims_);
}

bool PartialShape::IsCompatibleWith(const TensorShape& shape) const {
  if (!known_rank_) return true;
  if (shape.dims() != rank()) return false;
  for (int i = 0; i < rank(); ++i) {
    if (dims_[i] >= 0 && dims_[i] != shape.dim_size(i)) return false;
  }
  return true;
}

StatusOr<PartialShape> PartialShape::Merge(const PartialShape& other) const {
  if (!known_rank_) return other;
  if (!other.known_rank_) return *this;
  if (rank() != other.rank()) {
    return InvalidArgument("shapes ", DebugString(), " and ", other.DebugString(),
                           " have different ranks");
  }
  std::vector<int64_t> merged(dims_.size());
  for (size_t i = 0; i < dims_.size(); ++i) {
    int64_t a = dims_[i], b = other.dims_[i];
    if (a >= 0 && b >= 0 && a != b) {
      return InvalidArgument("shapes ", DebugString(), " and ", other.DebugString(),
                             " differ in dimension ", i, " (", a, " vs ", b, ")");
    }
    merged[i] = a >= 0 ? a : b;
  }
  return PartialShape(std::move(merged));
}

std::string PartialShape::DebugString() const {
  if (!known_rank_) return "<unknown>";
  std::string out = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i > 0) out += ",";
    out += dims_[i] < 0 ? "?" : std::to_string(dims_[i]);
  }
  return out + "]";
}

}  // namespace weft
