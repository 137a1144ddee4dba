// StatusOr<T>: either a value of type T or a non-OK Status explaining why there is none.
// Accessing value() on an error is a programming error (checked). Not internally synchronised.
#pragma once

#include <optional>
#include <utility>

#include "weft/core/logging.h"
#include "weft/core/status.h"

namespace weft {

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : status_(status) {  // NOLINT: implicit by design
    WEFT_CHECK(!status_.ok()) << "StatusOr constructed from an OK status without a value";
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  const T& value() const& {
    CheckHasValue();
    return *value_;
  }
  T& value() & {
    CheckHasValue();
    return *value_;
  }
  T&& value() && {
    CheckHasValue();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  void CheckHasValue() const { WEFT_CHECK(ok()) << "StatusOr has no value: " << status_; }

  Status status_;
  std::optional<T> value_;
};

}  // namespace weft
