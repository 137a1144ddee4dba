// DynamicPartition, DynamicStitch and Range kernels. Partition and stitch move whole rows (the
// dimensions after the partition or index dimensions) as bytes, so they serve every array dtype.
// Every partition number and index is checked before any output is written: one out of range is
// an InvalidArgument naming its position and value, never a crash.
#include <cstring>
#include <vector>

#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/array/array_util.h"

namespace weft::kernels::array {
namespace {

// Whether `prefix`'s dims are the first dims of `shape`.
bool IsPrefix(const TensorShape& prefix, const TensorShape& shape) {
  if (prefix.dims() > shape.dims()) return false;
  for (int d = 0; d < prefix.dims(); ++d) {
    if (prefix.dim_size(d) != shape.dim_size(d)) return false;
  }
  return true;
}

// The dims of `shape` after the first `skip`, behind a leading `rows`.
TensorShape RowsOf(int64_t rows, const TensorShape& shape, int skip) {
  std::vector<int64_t> dims = {rows};
  for (int d = skip; d < shape.dims(); ++d) dims.push_back(shape.dim_size(d));
  return TensorShape(dims);
}

class DynamicPartitionOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& data = context->input(0);
    const Tensor& partitions = context->input(1);
    if (!IsPrefix(partitions.shape(), data.shape())) {
      return NodeError(*this, "partitions of shape ", partitions.shape(),
                       " must be a prefix of data's shape ", data.shape());
    }
    const int count = context->num_outputs();
    const int64_t n = partitions.NumElements();
    std::vector<int64_t> sizes(count, 0);
    for (int64_t i = 0; i < n; ++i) {
      const int32_t p = partitions.data<int32_t>()[i];
      if (p < 0 || p >= count) {
        return NodeError(*this, "partitions[", i, "] = ", p, " is not in [0, ", count, ")");
      }
      ++sizes[p];
    }
    const size_t row_bytes = n == 0 ? 0 : data.TotalBytes() / n;
    std::vector<char*> next(count);
    for (int p = 0; p < count; ++p) {
      Tensor* output = nullptr;
      WEFT_RETURN_IF_ERROR(
          context->AllocateOutput(p, RowsOf(sizes[p], data.shape(), partitions.dims()), &output));
      next[p] = static_cast<char*>(output->raw_data());
    }
    const char* source = static_cast<const char*>(data.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      const int32_t p = partitions.data<int32_t>()[i];
      std::memcpy(next[p], source + i * row_bytes, row_bytes);
      next[p] += row_bytes;
    }
    return Status::OK();
  }
};

class DynamicStitchOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const int n = context->num_inputs() / 2;
    // The rows' shape comes from the first pair; every pair must agree with it.
    const TensorShape row = RowsOf(1, context->input(n).shape(), context->input(0).dims());
    int64_t rows = 0;
    std::vector<std::vector<int64_t>> indices(n);
    for (int m = 0; m < n; ++m) {
      const Tensor& index = context->input(m);
      const Tensor& data = context->input(n + m);
      if (!IsPrefix(index.shape(), data.shape()) ||
          !(RowsOf(1, data.shape(), index.dims()) == row)) {
        return NodeError(*this, "data ", m, " of shape ", data.shape(), " must be indices ", m,
                         "'s shape ", index.shape(), " followed by the rows' shape (as [1, ...]) ",
                         row);
      }
      WEFT_RETURN_IF_ERROR(ReadIndices(*this, index, "indices", &indices[m], true));
      for (size_t i = 0; i < indices[m].size(); ++i) {
        if (indices[m][i] < 0) {
          return NodeError(*this, "indices ", m, "[", i, "] = ", indices[m][i], " is negative");
        }
        rows = std::max(rows, indices[m][i] + 1);
      }
    }
    Tensor* merged = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, RowsOf(rows, row, 1), &merged));
    const size_t row_bytes =
        static_cast<size_t>(row.num_elements()) * DataTypeSize(merged->dtype());
    char* target = static_cast<char*>(merged->raw_data());
    std::memset(target, 0, merged->TotalBytes());
    for (int m = 0; m < n; ++m) {
      const char* source = static_cast<const char*>(context->input(n + m).raw_data());
      for (size_t i = 0; i < indices[m].size(); ++i) {
        std::memcpy(target + indices[m][i] * row_bytes, source + i * row_bytes, row_bytes);
      }
    }
    return Status::OK();
  }
};

template <typename T>
class RangeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    for (int i = 0; i < 3; ++i) {
      if (context->input(i).dims() != 0) {
        return NodeError(*this, "input ", i, " (start, limit, delta) must be a scalar, but has ",
                         "shape ", context->input(i).shape());
      }
    }
    const T start = *context->input(0).data<T>();
    const T limit = *context->input(1).data<T>();
    const T delta = *context->input(2).data<T>();
    if (delta == 0) return NodeError(*this, "delta must not be 0");
    if ((delta > 0 && start > limit) || (delta < 0 && start < limit)) {
      return NodeError(*this, "start ", start, " cannot reach limit ", limit, " by delta ", delta);
    }
    const int64_t size =
        (static_cast<int64_t>(limit) - start + delta + (delta > 0 ? -1 : 1)) / delta;
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape({size}), &output));
    for (int64_t i = 0; i < size; ++i) output->data<T>()[i] = static_cast<T>(start + i * delta);
    return Status::OK();
  }
};

}  // namespace

void RegisterPartitionKernels(KernelRegistry& registry) {
  registry.Register<DynamicPartitionOp>(
      KernelDef("DynamicPartition", "CPU").TypeConstraint("T", ArrayDataTypes()));
  registry.Register<DynamicStitchOp>(
      KernelDef("DynamicStitch", "CPU").TypeConstraint("T", ArrayDataTypes()));
  registry.Register<RangeOp<int32_t>>(KernelDef("Range", "CPU").TypeConstraint<int32_t>("Tidx"));
  registry.Register<RangeOp<int64_t>>(KernelDef("Range", "CPU").TypeConstraint<int64_t>("Tidx"));
}

}  // namespace weft::kernels::array
