#include "weft/core/tensor.h"

#include <cstdint>
#include <cstring>

#include "weft/core/allocator.h"

namespace weft {
namespace {

// Owns bytes made by an Allocator and gives them back to it.
class AllocatorBuffer final : public TensorBuffer {
 public:
  AllocatorBuffer(Allocator* allocator, void* data, size_t size)
      : allocator_(allocator), data_(data), size_(size) {}
  ~AllocatorBuffer() override { allocator_->DeallocateRaw(data_, size_); }
  void* data() const override { return data_; }
  size_t size() const override { return size_; }
  Allocator* allocator() const override { return allocator_; }

 private:
  Allocator* const allocator_;
  void* const data_;
  const size_t size_;
};

template <typename T>
void AppendValues(const Tensor& t, int64_t count, std::string* out) {
  const T* values = t.data<T>();
  for (int64_t i = 0; i < count; ++i) {
    if (i > 0) out->push_back(' ');
    if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, bool>) {
      *out += std::to_string(static_cast<int>(values[i]));
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      *out += StrCat(static_cast<float>(values[i]));
    } else {
      *out += StrCat(values[i]);
    }
  }
}

}  // namespace

StatusOr<Tensor> Tensor::Allocate(DataType dtype, const TensorShape& shape) {
  return Allocate(HostAllocator(), dtype, shape);
}

StatusOr<Tensor> Tensor::Allocate(Allocator* allocator, DataType dtype, const TensorShape& shape) {
  WEFT_CHECK(allocator != nullptr);
  // A shape may hold up to 2^63 - 1 elements; its bytes must not wrap around to a small buffer
  // (nor come near enough to wrap when the allocator rounds them up to its alignment).
  const size_t element_bytes = DataTypeSize(dtype);
  if (element_bytes > 0 &&
      static_cast<uint64_t>(shape.num_elements()) > SIZE_MAX / 2 / element_bytes) {
    return ResourceExhausted("a ", DataTypeName(dtype), " tensor of shape ", shape,
                             " needs more bytes than memory can address");
  }
  size_t bytes = static_cast<size_t>(shape.num_elements()) * element_bytes;
  void* data = allocator->AllocateRaw(kTensorAlignment, bytes);
  if (data == nullptr) {
    return ResourceExhausted("out of memory allocating ", bytes, " bytes for a ",
                             DataTypeName(dtype), " tensor of shape ", shape, " from allocator ",
                             allocator->Name());
  }
  return Tensor(dtype, shape, std::make_unique<AllocatorBuffer>(allocator, data, bytes));
}

bool Tensor::IsInHostMemory() const { return SameMemorySpace(allocator(), nullptr); }

Tensor::Tensor(DataType dtype, const TensorShape& shape) {
  StatusOr<Tensor> allocated = Allocate(dtype, shape);
  WEFT_CHECK(allocated.ok()) << allocated.status();
  *this = std::move(allocated).value();
}

Tensor::Tensor(DataType dtype, const TensorShape& shape, std::unique_ptr<TensorBuffer> buffer)
    : dtype_(dtype), shape_(shape), buffer_(std::move(buffer)) {
  WEFT_CHECK(buffer_.get() != nullptr);
  WEFT_CHECK(buffer_->size() >= TotalBytes())
      << "buffer of " << buffer_->size() << " bytes for " << TotalBytes();
  data_ = static_cast<char*>(buffer_->data());
}

Tensor Tensor::Reshaped(const TensorShape& shape) const {
  WEFT_CHECK(shape.num_elements() == NumElements())
      << "cannot reshape " << shape_ << " to " << shape;
  Tensor view = *this;
  view.shape_ = shape;
  return view;
}

Tensor Tensor::Slice(int64_t begin, int64_t end) const {
  WEFT_CHECK(dims() >= 1 && begin >= 0 && begin <= end && end <= dim_size(0));
  Tensor view = *this;
  int64_t row_elements = dim_size(0) == 0 ? 0 : NumElements() / dim_size(0);
  view.shape_.set_dim(0, end - begin);
  view.data_ = data_ + begin * row_elements * static_cast<int64_t>(DataTypeSize(dtype_));
  return view;
}

Tensor Tensor::DeepCopy() const {
  if (!IsInitialized()) return Tensor();
  Tensor copy(dtype_, shape_);
  if (TotalBytes() > 0) std::memcpy(copy.data_, data_, TotalBytes());
  return copy;
}

std::string Tensor::DebugString(int max_entries) const {
  if (!IsInitialized()) return "Tensor<uninitialized>";
  std::string out = StrCat("Tensor<", DataTypeName(dtype_), ", ", shape_.DebugString(), ": ");
  int64_t count = std::min<int64_t>(NumElements(), max_entries);
  bool visited =
      VisitNumericType(dtype_, [&]<typename T>() { AppendValues<T>(*this, count, &out); });
  if (!visited) out += "<opaque>";
  if (count < NumElements()) out += " ...";
  out += ">";
  return out;
}

}  // namespace weft
