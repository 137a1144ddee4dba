// TensorShape: the fully known dimensions of a Tensor (rank 0 is a scalar). Value type, cheap to
// copy for the small ranks tensors have. Constructing from user data goes through
// TensorShape::Create, which rejects negative dimensions and element counts that overflow.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "weft/core/statusor.h"

namespace weft {

class TensorShape {
 public:
  TensorShape() = default;                           // a scalar
  TensorShape(std::initializer_list<int64_t> dims);  // dims must be valid (checked)
  explicit TensorShape(std::vector<int64_t> dims);   // dims must be valid (checked)

  // Validates user-provided dimensions: each >= 0 and the product fits in int64.
  static StatusOr<TensorShape> Create(std::span<const int64_t> dims);

  int dims() const { return static_cast<int>(dims_.size()); }
  int64_t dim_size(int i) const { return dims_[i]; }
  const std::vector<int64_t>& dim_sizes() const { return dims_; }
  int64_t num_elements() const { return num_elements_; }

  void AddDim(int64_t size);
  void set_dim(int i, int64_t size);
  void RemoveDim(int i);

  // "[2,3]" ("[]" for a scalar).
  std::string DebugString() const;

  friend bool operator==(const TensorShape& a, const TensorShape& b) { return a.dims_ == b.dims_; }

 private:
  void Recompute();

  std::vector<int64_t> dims_;
  int64_t num_elements_ = 1;
};

std::ostream& operator<<(std::ostream& out, const TensorShape& shape);

}  // namespace weft
