// Slice kernel: the block of `input` starting at `begin` with extent `size` (-1: to the end).
// When the block is one contiguous, 64-byte aligned run of the input (say rows of a matrix) the
// output is a view of the input's buffer. Otherwise the trailing dimensions the block covers fully
// are merged with the last partial one into a contiguous chunk, and the chunks (one per index of
// the dimensions before it) are copied with memcpy, spread over the threads when large.
#include <cstdint>
#include <cstring>

#include "weft/core/allocator.h"
#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/array/array_util.h"
#include "weft/kernels/eigen_support.h"

namespace weft::kernels::array {
namespace {

// input: any shape of rank r; begin, size: [r] int32/int64.
class SliceOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    std::vector<int64_t> begin, size;
    WEFT_RETURN_IF_ERROR(ReadIndices(*this, context->input(1), "begin", &begin));
    WEFT_RETURN_IF_ERROR(ReadIndices(*this, context->input(2), "size", &size));
    const int rank = input.dims();
    if (static_cast<int>(begin.size()) != rank || static_cast<int>(size.size()) != rank) {
      return NodeError(*this, "begin [", StrJoin(begin, ","), "] and size [", StrJoin(size, ","),
                       "] must have one entry per dimension of shape ", input.shape());
    }
    std::vector<int64_t> out_dims(rank);
    for (int i = 0; i < rank; ++i) {
      const int64_t dim = input.dim_size(i), b = begin[i];
      const int64_t s = size[i] == -1 ? dim - b : size[i];
      if (b < 0 || b > dim || s < 0 || b + s > dim) {
        return NodeError(*this, "slice begin [", StrJoin(begin, ","), "] size [",
                         StrJoin(size, ","), "] is out of bounds for shape ", input.shape(),
                         " in dimension ", i);
      }
      out_dims[i] = s;
    }
    TensorShape out_shape(std::move(out_dims));
    if (out_shape == input.shape()) return context->SetOutput(0, input);
    // k: the first of the trailing dimensions the slice covers fully; k - 1 is partial (k >= 1).
    int k = rank;
    while (k > 0 && begin[k - 1] == 0 && out_shape.dim_size(k - 1) == input.dim_size(k - 1)) --k;
    std::vector<int64_t> strides(rank, 1);
    for (int i = rank - 2; i >= 0; --i) strides[i] = strides[i + 1] * input.dim_size(i + 1);
    bool contiguous = out_shape.num_elements() > 0;
    int64_t offset = 0;
    for (int i = 0; i < rank; ++i) {
      offset += begin[i] * strides[i];
      if (i < k - 1 && out_shape.dim_size(i) != 1) contiguous = false;
    }
    if (contiguous) {
      Tensor view = input.Reshaped(TensorShape({input.NumElements()}))
                        .Slice(offset, offset + out_shape.num_elements());
      if (reinterpret_cast<uintptr_t>(view.raw_data()) % kTensorAlignment == 0) {
        return context->SetOutput(0, view.Reshaped(out_shape));
      }
    }
    Tensor* out;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, out_shape, &out));
    if (out->NumElements() == 0) return Status::OK();
    CopyChunks(context, input, begin, strides, k - 1, out);
    return Status::OK();
  }

 private:
  // Copies one contiguous chunk per index of the output's dimensions [0, partial).
  static void CopyChunks(OpKernelContext* context, const Tensor& input,
                         const std::vector<int64_t>& begin, const std::vector<int64_t>& strides,
                         int partial, Tensor* out) {
    const size_t element = DataTypeSize(input.dtype());
    const int64_t chunk = out->dim_size(partial) * strides[partial];
    const size_t chunk_bytes = static_cast<size_t>(chunk) * element;
    int64_t base = 0;  // input offset of the block's first element
    for (size_t i = 0; i < begin.size(); ++i) base += begin[i] * strides[i];
    const char* src = static_cast<const char*>(input.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    const int64_t chunks = out->NumElements() / chunk;
    auto work = [&](int64_t first, int64_t last) {
      // Unravel `first` over the output dims [0, partial), then step like an odometer.
      std::vector<int64_t> index(partial);
      int64_t offset = base;
      for (int64_t rest = first, i = partial - 1; i >= 0; --i) {
        index[i] = rest % out->dim_size(static_cast<int>(i));
        rest /= out->dim_size(static_cast<int>(i));
        offset += index[i] * strides[i];
      }
      for (int64_t c = first; c < last; ++c) {
        std::memcpy(dst + c * chunk_bytes, src + offset * static_cast<int64_t>(element),
                    chunk_bytes);
        for (int i = partial - 1; i >= 0; --i) {
          offset += strides[i];
          if (++index[i] < out->dim_size(i)) break;
          offset -= strides[i] * out->dim_size(i);
          index[i] = 0;
        }
      }
    };
    if (out->NumElements() >= kMinParallelElements) {
      ParallelFor(context, chunks, static_cast<double>(chunk_bytes) / 8 + 10, work);
    } else {
      work(0, chunks);
    }
  }
};

}  // namespace

void RegisterSliceKernels(KernelRegistry& registry) {
  registry.Register<SliceOp>(KernelDef("Slice", "CPU").TypeConstraint("T", ArrayDataTypes()));
}

}  // namespace weft::kernels::array
