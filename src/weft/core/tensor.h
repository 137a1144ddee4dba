// Tensor: a typed, shaped view of a ref-counted, 64-byte aligned buffer. Copying a Tensor shares
// the buffer (no data copy); the buffer is freed when its last Tensor goes away. The buffer knows
// the Allocator it came from, so the runtime can tell which memory a tensor lives in. Reshaped()
// and Slice() make new views of the same buffer. A Tensor value is not synchronised: share it
// between threads only for reading, or hand it over.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "weft/core/dtype.h"
#include "weft/core/logging.h"
#include "weft/core/tensor_shape.h"

namespace weft {

class Allocator;

// Memory behind one or more Tensors. Implementations own their bytes (from an Allocator) or keep
// the owner of foreign bytes alive (for example a received network message). The Tensors that
// share a buffer count themselves in it (an intrusive count rather than a shared_ptr's, so that
// RefCountIsOne can read it with acquire order; see there).
class TensorBuffer {
 public:
  TensorBuffer() = default;
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;
  virtual ~TensorBuffer() = default;
  virtual void* data() const = 0;
  virtual size_t size() const = 0;
  // The allocator that owns the bytes; null for host bytes owned elsewhere.
  virtual Allocator* allocator() const { return nullptr; }

  void Ref() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  // Deletes the buffer with its last reference. Release order: this owner's reads and writes of
  // the bytes happen before whatever the next sole owner (or the deleter) does with them.
  void Unref() const {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  // Acquire order pairs with Unref's release: a writer that sees one owner (itself) writes after
  // every other former owner's last read, so copy-on-write may write in place.
  bool RefCountIsOne() const { return refs_.load(std::memory_order_acquire) == 1; }

 private:
  mutable std::atomic<int64_t> refs_{1};
};

// An owning reference to a TensorBuffer: copying it adds a reference, destroying it drops one.
class TensorBufferRef {
 public:
  TensorBufferRef() = default;
  explicit TensorBufferRef(std::unique_ptr<TensorBuffer> buffer) : buffer_(buffer.release()) {}
  TensorBufferRef(const TensorBufferRef& other) : buffer_(other.buffer_) {
    if (buffer_ != nullptr) buffer_->Ref();
  }
  TensorBufferRef(TensorBufferRef&& other) noexcept : buffer_(other.buffer_) {
    other.buffer_ = nullptr;
  }
  TensorBufferRef& operator=(TensorBufferRef other) noexcept {
    std::swap(buffer_, other.buffer_);
    return *this;
  }
  ~TensorBufferRef() {
    if (buffer_ != nullptr) buffer_->Unref();
  }

  TensorBuffer* get() const { return buffer_; }
  TensorBuffer* operator->() const { return buffer_; }

 private:
  TensorBuffer* buffer_ = nullptr;
};

class Tensor {
 public:
  // An uninitialised tensor: no type, no buffer.
  Tensor() = default;
  // Allocates an uninitialised buffer for `shape` (checked: allocation must succeed).
  Tensor(DataType dtype, const TensorShape& shape);
  // Wraps existing memory; `buffer` must hold at least shape.num_elements() elements.
  Tensor(DataType dtype, const TensorShape& shape, std::unique_ptr<TensorBuffer> buffer);

  // Allocates like the constructor, but reports allocation failure instead of stopping.
  static StatusOr<Tensor> Allocate(DataType dtype, const TensorShape& shape);
  // Allocates an uninitialised buffer from `allocator` (not owned; it must outlive the buffer).
  // ResourceExhausted naming the allocator when it has no memory left.
  static StatusOr<Tensor> Allocate(Allocator* allocator, DataType dtype, const TensorShape& shape);

  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t(DataTypeToEnum<T>::value, TensorShape());
    *t.data<T>() = value;
    return t;
  }
  // Builds a tensor from values; shape defaults to a vector of values.size().
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const TensorShape& shape);
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector(values, TensorShape({static_cast<int64_t>(values.size())}));
  }

  bool IsInitialized() const { return buffer_.get() != nullptr || dtype_ != DataType::kInvalid; }
  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int dims() const { return shape_.dims(); }
  int64_t dim_size(int i) const { return shape_.dim_size(i); }
  int64_t NumElements() const { return shape_.num_elements(); }
  size_t TotalBytes() const { return static_cast<size_t>(NumElements()) * DataTypeSize(dtype_); }

  // Typed access; T must match dtype() (checked).
  template <typename T>
  T* data() {
    CheckType(DataTypeToEnum<T>::value);
    return reinterpret_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    CheckType(DataTypeToEnum<T>::value);
    return reinterpret_cast<const T*>(data_);
  }
  template <typename T>
  std::span<T> flat() {
    return {data<T>(), static_cast<size_t>(NumElements())};
  }
  template <typename T>
  std::span<const T> flat() const {
    return {data<T>(), static_cast<size_t>(NumElements())};
  }
  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }

  // A view of the same buffer with another shape of the same element count (checked).
  Tensor Reshaped(const TensorShape& shape) const;
  // Rows [begin, end) of dimension 0, sharing the buffer. Requires dims() >= 1 (checked).
  Tensor Slice(int64_t begin, int64_t end) const;
  // A new buffer holding a copy of the elements.
  Tensor DeepCopy() const;

  bool SharesBufferWith(const Tensor& other) const {
    return buffer_.get() != nullptr && buffer_.get() == other.buffer_.get();
  }
  // True when this Tensor is the only owner of its buffer, so a kernel may write into it in place.
  bool RefCountIsOne() const { return buffer_.get() != nullptr && buffer_->RefCountIsOne(); }
  // The buffer, owned by the Tensors that share it; null for a tensor without one.
  TensorBuffer* buffer() const { return buffer_.get(); }
  // The allocator of the buffer; null for foreign host bytes and for a tensor without a buffer.
  Allocator* allocator() const { return buffer_.get() ? buffer_->allocator() : nullptr; }
  // Whether the elements are in host memory (see SameMemorySpace in allocator.h).
  bool IsInHostMemory() const;

  // "Tensor<float32, [2,2]: 1 2 3 4>", showing at most `max_entries` values.
  std::string DebugString(int max_entries = 16) const;

 private:
  void CheckType(DataType expected) const {
    WEFT_CHECK(expected == dtype_)
        << "tensor holds " << DataTypeName(dtype_) << ", accessed as " << DataTypeName(expected);
  }

  DataType dtype_ = DataType::kInvalid;
  TensorShape shape_;
  TensorBufferRef buffer_;
  char* data_ = nullptr;  // start of this view inside buffer_
};

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values, const TensorShape& shape) {
  WEFT_CHECK(static_cast<int64_t>(values.size()) == shape.num_elements())
      << values.size() << " values for shape " << shape;
  Tensor t(DataTypeToEnum<T>::value, shape);
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace weft
