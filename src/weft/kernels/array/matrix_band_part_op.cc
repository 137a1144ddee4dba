// MatrixBandPart on CPU: zeroes the elements of each innermost matrix outside its band, moving them
// as bytes (zero is all-zero bytes in every array dtype), rows split over the intra-op threads; a
// band that covers whole matrices passes the input through uncopied.
#include <algorithm>
#include <string_view>

#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/array/array_util.h"
#include "weft/kernels/eigen_support.h"

namespace weft::kernels::array {
namespace {

class MatrixBandPartOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    if (input.dims() < 2) {
      return NodeError(*this, "input must have rank at least 2, but has shape ", input.shape());
    }
    const int64_t rows = input.dim_size(input.dims() - 2);
    const int64_t cols = input.dim_size(input.dims() - 1);
    int64_t num_lower = 0, num_upper = 0;
    WEFT_RETURN_IF_ERROR(ReadBand(context->input(1), "num_lower", "rows", rows, &num_lower));
    WEFT_RETURN_IF_ERROR(ReadBand(context->input(2), "num_upper", "columns", cols, &num_upper));
    // m - n <= rows - 1 and n - m <= cols - 1 always hold.
    const bool whole_lower = num_lower < 0 || num_lower >= rows - 1;
    const bool whole_upper = num_upper < 0 || num_upper >= cols - 1;
    if (input.NumElements() == 0 || (whole_lower && whole_upper)) {
      return context->SetOutput(0, input);
    }
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->ForwardInputOrAllocateOutput({0}, 0, input.shape(), &output));
    VisitByElementSize(input.dtype(), [&]<typename U>() {
      Band<U>(context, ElementsAs<U>(input), ElementsAs<U>(*output), input.NumElements() / cols,
              rows, cols, whole_lower ? -1 : num_lower, whole_upper ? -1 : num_upper);
    });
    return Status::OK();
  }

 private:
  // Reads the scalar band count `t` into `value`: negative means the whole triangle; more than
  // `dim` (the rows or columns it counts along) is an error, as in the reference.
  Status ReadBand(const Tensor& t, std::string_view name, std::string_view dim_name, int64_t dim,
                  int64_t* value) const {
    if (t.dims() != 0) {
      return NodeError(*this, name, " must be a scalar, but has shape ", t.shape());
    }
    if (t.dtype() == DataType::kInt32) {
      *value = *t.data<int32_t>();
    } else if (t.dtype() == DataType::kInt64) {
      *value = *t.data<int64_t>();
    } else {
      return NodeError(*this, name, " must be int32 or int64, but is ", DataTypeName(t.dtype()));
    }
    if (*value > dim) {
      return NodeError(*this, name, " must be negative or at most the number of ", dim_name, " (",
                       dim, "), but is ", *value);
    }
    return Status::OK();
  }

  // Writes the band of every matrix of `in` (`total_rows` rows of `cols`) into `out`, which may be
  // `in`; -1 means the whole lower or upper part. Row r of a matrix keeps the columns
  // [r - num_lower, r + num_upper]: [m, n] with m - n <= num_lower and n - m <= num_upper.
  template <typename U>
  static void Band(OpKernelContext* context, const U* in, U* out, int64_t total_rows, int64_t rows,
                   int64_t cols, int64_t num_lower, int64_t num_upper) {
    const bool in_place = in == out;
    ParallelFor(
        context, total_rows, static_cast<double>(cols) * 2 + 10, [=](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            const int64_t r = row % rows;
            const int64_t start = num_lower < 0 ? 0 : std::clamp(r - num_lower, int64_t{0}, cols);
            const int64_t stop =
                num_upper < 0 ? cols : std::max(start, std::min(cols, r + num_upper + 1));
            const U* src = in + row * cols;
            U* dst = out + row * cols;
            std::fill(dst, dst + start, U{0});
            if (!in_place) std::copy(src + start, src + stop, dst + start);
            std::fill(dst + stop, dst + cols, U{0});
          }
        });
  }
};

}  // namespace

void RegisterMatrixBandPartKernels(KernelRegistry& registry) {
  registry.Register<MatrixBandPartOp>(
      KernelDef("MatrixBandPart", "CPU").TypeConstraint("T", ArrayDataTypes()));
}

}  // namespace weft::kernels::array
