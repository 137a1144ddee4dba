// PartialShape: a shape that may be partly unknown — an unknown rank, or known rank with some
// dimensions unknown (-1). Used by shape inference and by Placeholder's shape attr. Value type.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/core/tensor_shape.h"

namespace weft {

class PartialShape {
 public:
  static constexpr int64_t kUnknownDim = -1;

  PartialShape() = default;  // unknown rank
  PartialShape(std::initializer_list<int64_t> dims) : known_rank_(true), dims_(dims) {}
  explicit PartialShape(std::vector<int64_t> dims) : known_rank_(true), dims_(std::move(dims)) {}
  explicit PartialShape(const TensorShape& shape) : known_rank_(true), dims_(shape.dim_sizes()) {}

  static PartialShape UnknownRank() { return PartialShape(); }
  static PartialShape UnknownOfRank(int rank) {
    return PartialShape(std::vector<int64_t>(rank, kUnknownDim));
  }

  bool rank_known() const { return known_rank_; }
  int rank() const { return known_rank_ ? static_cast<int>(dims_.size()) : -1; }
  int64_t dim(int i) const { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  bool IsFullyDefined() const;
  // Number of elements when fully defined, else -1.
  int64_t num_elements() const;
  // Requires IsFullyDefined() (checked).
  TensorShape ToTensorShape() const;

  // True when `shape` could be a value of this partial shape.
  bool IsCompatibleWith(const TensorShape& shape) const;
  // The most specific shape compatible with both; InvalidArgument when they conflict.
  StatusOr<PartialShape> Merge(const PartialShape& other) const;

  // "[?,784]", "<unknown>".
  std::string DebugString() const;

  friend bool operator==(const PartialShape& a, const PartialShape& b) {
    return a.known_rank_ == b.known_rank_ && a.dims_ == b.dims_;
  }

 private:
  bool known_rank_ = false;
  std::vector<int64_t> dims_;
};

}  // namespace weft
