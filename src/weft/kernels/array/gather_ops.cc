// GatherV2 and UnsortedSegmentSum kernels. GatherV2 views params as [outer, limit, inner] around
// the axis and copies the inner run at each index, for every outer index, in parallel when large;
// it moves bytes only, so it serves every array dtype. UnsortedSegmentSum adds each inner run of
// data into the output segment its id names, split over the inner columns so that no output
// element has two writers. Every index is checked before any output is written: an index out of
// range is an InvalidArgument naming its position, its value and the bound, never a crash.
#include <algorithm>
#include <string>
#include <vector>

#include "weft/kernels/array/array_kernels.h"
#include "weft/kernels/array/array_util.h"
#include "weft/kernels/eigen_support.h"

namespace weft::kernels::array {
namespace {

// The elements of an int32 or int64 tensor of any shape, widened to int64.
std::vector<int64_t> WidenIndices(const Tensor& t) {
  std::vector<int64_t> values(static_cast<size_t>(t.NumElements()));
  if (t.dtype() == DataType::kInt32) {
    std::copy_n(t.data<int32_t>(), values.size(), values.begin());
  } else {
    std::copy_n(t.data<int64_t>(), values.size(), values.begin());
  }
  return values;
}

// Element `flat` of a tensor of `shape` as "[i,j]" ("" for a scalar), for messages.
std::string IndexSuffix(int64_t flat, const TensorShape& shape) {
  if (shape.dims() == 0) return "";
  std::vector<int64_t> index(shape.dims());
  for (int i = shape.dims() - 1; i >= 0; --i) {
    index[i] = flat % shape.dim_size(i);
    flat /= shape.dim_size(i);
  }
  return StrCat("[", StrJoin(index, ","), "]");
}

// Reads a scalar int32/int64 input.
Status ReadScalar(const OpKernel& kernel, const Tensor& t, std::string_view what, int64_t* value) {
  if (t.dims() != 0) return NodeError(kernel, what, " must be a scalar, but has shape ", t.shape());
  std::vector<int64_t> values;
  WEFT_RETURN_IF_ERROR(ReadIndices(kernel, t, what, &values, /*allow_scalar=*/true));
  *value = values[0];
  return Status::OK();
}

// params, indices (int32/int64, any shape), axis (scalar) -> params.shape[:axis] + indices.shape
// + params.shape[axis+1:].
class GatherV2Op final : public OpKernel {
 public:
  explicit GatherV2Op(OpKernelConstruction* context) : OpKernel(context) {
    int64_t batch_dims = 0;
    Status status = context->GetAttr("batch_dims", &batch_dims);
    if (status.ok() && batch_dims != 0) {
      status = NodeError(*this, "batch_dims must be 0 (batched gathers are not supported), but is ",
                         batch_dims);
    }
    context->SetStatus(status);
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& params = context->input(0);
    const Tensor& indices = context->input(1);
    int64_t axis = 0;
    WEFT_RETURN_IF_ERROR(ReadScalar(*this, context->input(2), "axis", &axis));
    const int rank = params.dims();
    if (rank == 0) return NodeError(*this, "params must be at least 1-D, but is a scalar");
    if (axis < -rank || axis >= rank) {
      return NodeError(*this, "axis ", axis, " is out of range [", -rank, ", ", rank,
                       ") for params of shape ", params.shape());
    }
    if (axis < 0) axis += rank;
    int64_t outer = 1, inner = 1;
    std::vector<int64_t> out_dims;
    for (int i = 0; i < axis; ++i) {
      outer *= params.dim_size(i);
      out_dims.push_back(params.dim_size(i));
    }
    for (int i = 0; i < indices.dims(); ++i) out_dims.push_back(indices.dim_size(i));
    for (int i = static_cast<int>(axis) + 1; i < rank; ++i) {
      inner *= params.dim_size(i);
      out_dims.push_back(params.dim_size(i));
    }
    const int64_t limit = params.dim_size(static_cast<int>(axis));
    const std::vector<int64_t> index = WidenIndices(indices);
    for (size_t i = 0; i < index.size(); ++i) {
      if (index[i] < 0 || index[i] >= limit) {
        return NodeError(*this, "indices", IndexSuffix(static_cast<int64_t>(i), indices.shape()),
                         " = ", index[i], " is not in [0, ", limit, ")");
      }
    }
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape(std::move(out_dims)), &out));
    if (out->NumElements() == 0) return Status::OK();
    const int64_t count = static_cast<int64_t>(index.size());
    VisitByElementSize(params.dtype(), [&]<typename U>() {
      const U* src = ElementsAs<U>(params);
      U* dst = ElementsAs<U>(*out);
      // Unit u copies the inner run for outer index u / count and index u % count.
      auto copy = [&](int64_t begin, int64_t end) {
        for (int64_t u = begin; u < end; ++u) {
          const int64_t o = u / count, n = u % count;
          std::copy_n(src + (o * limit + index[n]) * inner, inner, dst + u * inner);
        }
      };
      if (out->NumElements() < kMinParallelElements) {
        copy(0, outer * count);
      } else {
        ParallelFor(context, outer * count, static_cast<double>(inner) + 10, copy);
      }
    });
    return Status::OK();
  }
};

// data [S..., D...], segment_ids [S...] (int32/int64), num_segments (scalar) ->
// [num_segments, D...]. Negative ids drop their rows, as in the reference system.
template <typename T>
class UnsortedSegmentSumOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Compute(OpKernelContext* context) override {
    const Tensor& data = context->input(0);
    const Tensor& ids = context->input(1);
    int64_t segments = 0;
    WEFT_RETURN_IF_ERROR(ReadScalar(*this, context->input(2), "num_segments", &segments));
    if (segments < 0) {
      return NodeError(*this, "num_segments must be non-negative, but is ", segments);
    }
    bool prefix = ids.dims() <= data.dims();
    for (int i = 0; prefix && i < ids.dims(); ++i) prefix = ids.dim_size(i) == data.dim_size(i);
    if (!prefix) {
      return NodeError(*this, "segment_ids shape ", ids.shape(), " must be a prefix of data shape ",
                       data.shape());
    }
    std::vector<int64_t> out_dims = {segments};
    int64_t inner = 1;
    for (int i = ids.dims(); i < data.dims(); ++i) {
      inner *= data.dim_size(i);
      out_dims.push_back(data.dim_size(i));
    }
    const std::vector<int64_t> segment = WidenIndices(ids);
    for (size_t i = 0; i < segment.size(); ++i) {
      if (segment[i] >= segments) {
        return NodeError(*this, "segment_ids", IndexSuffix(static_cast<int64_t>(i), ids.shape()),
                         " = ", segment[i], " is out of range [0, ", segments, ")");
      }
    }
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, TensorShape(std::move(out_dims)), &out));
    if (out->NumElements() == 0) return Status::OK();
    const T* src = data.data<T>();
    T* dst = out->data<T>();
    const int64_t rows = static_cast<int64_t>(segment.size());
    // Columns [begin, end) of every row: each output element is summed by one shard, in row order.
    auto add = [&](int64_t begin, int64_t end) {
      if (begin == 0 && end == inner) {
        std::fill(dst, dst + segments * inner, T(0));
      } else {
        for (int64_t s = 0; s < segments; ++s) {
          std::fill(dst + s * inner + begin, dst + s * inner + end, T(0));
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        if (segment[r] < 0) continue;
        const T* row = src + r * inner;
        T* target = dst + segment[r] * inner;
        for (int64_t c = begin; c < end; ++c) target[c] += row[c];
      }
    };
    // Shards of a few columns each would walk every row for a sliver of it (an embedding's rows
    // are 16 to 128 wide): rows that narrow are summed by one thread.
    constexpr int64_t kMinParallelColumns = 256;
    if (data.NumElements() + out->NumElements() < kMinParallelElements ||
        inner < kMinParallelColumns) {
      add(0, inner);
    } else {
      ParallelFor(context, inner, static_cast<double>(rows + segments), add);
    }
    return Status::OK();
  }
};

template <typename T>
void RegisterSegmentSum(KernelRegistry& registry) {
  registry.Register<UnsortedSegmentSumOp<T>>(
      KernelDef("UnsortedSegmentSum", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterGatherKernels(KernelRegistry& registry) {
  registry.Register<GatherV2Op>(
      KernelDef("GatherV2", "CPU").TypeConstraint("Tparams", ArrayDataTypes()));
  RegisterSegmentSum<float>(registry);
  RegisterSegmentSum<double>(registry);
  RegisterSegmentSum<int32_t>(registry);
  RegisterSegmentSum<int64_t>(registry);
}

}  // namespace weft::kernels::array
