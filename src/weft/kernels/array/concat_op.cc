// ConcatV2 kernel: joins N tensors along `axis`. Each input is viewed as [outer, inner_i] (outer:
// the product of the dimensions before axis), so the output is `outer` rows, each the
// concatenation of one row of every input, copied with memcpy. Rows are spread over the threads
// when the output is large; with few rows, the copies themselves are cut into pieces instead.
#include <cstring>

#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/array/array_util.h"
#include "weft/kernels/eigen_support.h"

namespace weft::kernels::array {
namespace {

// values: N tensors of equal rank >= 1 that agree outside `axis`; axis: a scalar in [-rank, rank).
class ConcatOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const int n = context->num_inputs() - 1;
    std::vector<int64_t> axis_value;
    const Tensor& axis_tensor = context->input(n);
    if (axis_tensor.dims() != 0) {
      return NodeError(*this, "axis must be a scalar, but has shape ", axis_tensor.shape());
    }
    WEFT_RETURN_IF_ERROR(ReadIndices(*this, axis_tensor, "axis", &axis_value, true));
    const Tensor& first = context->input(0);
    const int rank = first.dims();
    if (rank == 0) return NodeError(*this, "cannot concatenate scalars");
    int64_t axis = axis_value[0];
    if (axis < -rank || axis >= rank) {
      return NodeError(*this, "axis ", axis, " is out of range [", -rank, ", ", rank, ")");
    }
    if (axis < 0) axis += rank;
    std::vector<int64_t> out_dims = first.shape().dim_sizes();
    out_dims[axis] = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& in = context->input(i);
      bool agree = in.dims() == rank;
      for (int d = 0; agree && d < rank; ++d)
        agree = d == axis || in.dim_size(d) == first.dim_size(d);
      if (!agree) {
        return NodeError(*this, "input ", i, " has shape ", in.shape(), ", which does not match ",
                         "input 0's shape ", first.shape(), " outside axis ", axis);
      }
      out_dims[axis] += in.dim_size(static_cast<int>(axis));
    }
    StatusOr<TensorShape> out_shape = TensorShape::Create(out_dims);
    if (!out_shape.ok()) return NodeError(*this, out_shape.status().message());
    // When one input holds every element, it is the output.
    for (int i = 0; i < n; ++i) {
      const Tensor& in = context->input(i);
      if (in.NumElements() > 0 && in.NumElements() == out_shape->num_elements()) {
        return context->SetOutput(0, in.Reshaped(*out_shape));
      }
    }
    Tensor* out;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, *out_shape, &out));
    if (out->NumElements() == 0) return Status::OK();
    Copy(context, n, static_cast<int>(axis), out);
    return Status::OK();
  }

 private:
  struct Piece {
    const char* src;
    char* dst;
    size_t bytes;
  };

  static void Copy(OpKernelContext* context, int n, int axis, Tensor* out) {
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= out->dim_size(d);
    const size_t element = DataTypeSize(out->dtype());
    std::vector<const char*> src(n);
    std::vector<size_t> row_bytes(n);
    size_t out_row_bytes = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& in = context->input(i);
      src[i] = static_cast<const char*>(in.raw_data());
      row_bytes[i] = static_cast<size_t>(in.NumElements() / outer) * element;
      out_row_bytes += row_bytes[i];
    }
    char* dst = static_cast<char*>(out->raw_data());
    auto copy_rows = [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        char* row = dst + r * out_row_bytes;
        for (int i = 0; i < n; ++i) {
          std::memcpy(row, src[i] + r * row_bytes[i], row_bytes[i]);
          row += row_bytes[i];
        }
      }
    };
    if (out->NumElements() < kMinParallelElements) return copy_rows(0, outer);
    if (outer >= 64) {
      return ParallelFor(context, outer, static_cast<double>(out_row_bytes) / 8, copy_rows);
    }
    // Few long rows: cut every copy into pieces of at most kPieceBytes and spread those.
    constexpr size_t kPieceBytes = 128 * 1024;
    std::vector<Piece> pieces;
    for (int64_t r = 0; r < outer; ++r) {
      char* row = dst + r * out_row_bytes;
      for (int i = 0; i < n; ++i) {
        for (size_t at = 0; at < row_bytes[i]; at += kPieceBytes) {
          pieces.push_back(
              {src[i] + r * row_bytes[i] + at, row + at, std::min(kPieceBytes, row_bytes[i] - at)});
        }
        row += row_bytes[i];
      }
    }
    ParallelFor(context, static_cast<int64_t>(pieces.size()), kPieceBytes / 8.0,
                [&](int64_t begin, int64_t end) {
                  for (int64_t p = begin; p < end; ++p) {
                    std::memcpy(pieces[p].dst, pieces[p].src, pieces[p].bytes);
                  }
                });
  }
};

}  // namespace

void RegisterConcatKernels(KernelRegistry& registry) {
  registry.Register<ConcatOp>(KernelDef("ConcatV2", "CPU").TypeConstraint("T", ArrayDataTypes()));
}

}  // namespace weft::kernels::array
