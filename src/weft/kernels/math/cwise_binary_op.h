// BinaryOp<T, Functor>: the CPU kernel template behind every broadcasting binary op (Add, Equal,
// ...). A Functor names the output element type and builds the Eigen expression:
//
//   template <typename T> struct AddFunctor {
//     using Out = T;
//     template <typename X, typename Y> static auto Apply(const X& x, const Y& y) { return x + y; }
//     // Optional, run before any output is written:
//     // static Status Validate(const OpKernel& kernel, const Tensor& x, const Tensor& y);
//   };
//
// Paths, fastest first: same elements on both sides (flat); one side a single element (the other
// flat against a constant); [N,C] op [C] or [C] op [N,C] (row by row, narrow rows grouped against
// a tiled copy of the broadcast row); and the general case, where the broadcast sides are expanded
// to the output's shape and the op runs flat. The output reuses an input buffer when it can.
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/math/bcast.h"
#include "weft/kernels/math/device_eval.h"

namespace weft::kernels {

// The row path for [N,C] op [C] works on at least this many elements per step.
inline constexpr int64_t kMinRowPathWidth = 64;

template <typename T, typename Functor>
class BinaryOp final : public OpKernel {
 public:
  using Out = typename Functor::Out;

  explicit BinaryOp(OpKernelConstruction* context) : OpKernel(context) {}

  Status Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    const Tensor& y = context->input(1);
    StatusOr<BroadcastPlan> plan = MakeBroadcastPlan(x.shape(), y.shape());
    if (!plan.ok()) return plan.status().WithContext(FormatNodeForError(def()));
    if constexpr (requires { Functor::Validate(*this, x, y); }) {
      WEFT_RETURN_IF_ERROR(Functor::Validate(*this, x, y));
    }
    Tensor* out = nullptr;
    WEFT_RETURN_IF_ERROR(
        context->ForwardInputOrAllocateOutput({0, 1}, 0, plan->output_shape, &out));
    const int64_t n = out->NumElements();
    if (n == 0) return Status::OK();
    auto o = Flat<Out>(*out);
    if (!plan->needs_broadcast) {
      auto xf = Flat<T>(x);
      auto yf = Flat<T>(y);
      EvaluateOnDevice(context, n, [&](const auto& d) { o.device(d) = Functor::Apply(xf, yf); });
    } else if (x.NumElements() == 1) {
      auto yf = Flat<T>(y);
      const T xs = *x.data<T>();
      EvaluateOnDevice(context, n,
                       [&](const auto& d) { o.device(d) = Functor::Apply(yf.constant(xs), yf); });
    } else if (y.NumElements() == 1) {
      auto xf = Flat<T>(x);
      const T ys = *y.data<T>();
      EvaluateOnDevice(context, n,
                       [&](const auto& d) { o.device(d) = Functor::Apply(xf, xf.constant(ys)); });
    } else if (IsRowBroadcast(*plan)) {
      ComputeRows(context, x, y, *plan, out);
    } else {
      WEFT_RETURN_IF_ERROR(ComputeBroadcast(context, x, y, *plan, out));
    }
    return Status::OK();
  }

 private:
  // [N,C] op [1,C] or [1,C] op [N,C]: one side full, the other one row.
  static bool IsRowBroadcast(const BroadcastPlan& plan) {
    const std::vector<int64_t>& o = plan.output_dims;
    if (o.size() != 2) return false;
    const std::vector<int64_t> row = {1, o[1]};
    return (plan.x_dims == o && plan.y_dims == row) || (plan.x_dims == row && plan.y_dims == o);
  }

  // Runs the op row by row, each row a vectorised Eigen expression. Narrow rows are grouped: the
  // broadcast row is tiled `group` times so that each step covers at least kMinRowPathWidth
  // elements (the last step may cover fewer rows, using a prefix of the tiled row).
  static void ComputeRows(OpKernelContext* context, const Tensor& x, const Tensor& y,
                          const BroadcastPlan& plan, Tensor* out) {
    const int64_t rows = plan.output_dims[0], width = plan.output_dims[1];
    const bool x_is_row = plan.x_dims[0] == 1;
    const int64_t group =
        std::min(rows, width >= kMinRowPathWidth ? 1 : (kMinRowPathWidth + width - 1) / width);
    const int64_t step = group * width;
    std::unique_ptr<T[]> tiled;
    const T* row = x_is_row ? x.data<T>() : y.data<T>();
    if (group > 1) {
      tiled.reset(new T[step]);
      for (int64_t g = 0; g < group; ++g) std::copy_n(row, width, tiled.get() + g * width);
      row = tiled.get();
    }
    const T* full = x_is_row ? y.data<T>() : x.data<T>();
    Out* od = out->data<Out>();
    const int64_t steps = (rows + group - 1) / group;
    auto run = [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        const int64_t n = std::min(step, rows * width - s * step);
        ConstUnalignedEigenTensorMap<T> r(row, n);
        ConstUnalignedEigenTensorMap<T> f(full + s * step, n);
        UnalignedEigenTensorMap<Out> o(od + s * step, n);
        if (x_is_row) {
          o = Functor::Apply(r, f);
        } else {
          o = Functor::Apply(f, r);
        }
      }
    };
    if (rows * width < kMinParallelElements) {
      run(0, steps);
    } else {
      ParallelFor(context, steps, static_cast<double>(step), run);
    }
  }

  // The general case: each broadcast side is expanded into a temporary of the output's shape, then
  // the op runs flat. One Eigen expression per op (the flat one) keeps these kernels quick to
  // compile for every type and rank; the copies are plain row copies and fills.
  static Status ComputeBroadcast(OpKernelContext* context, const Tensor& x, const Tensor& y,
                                 const BroadcastPlan& plan, Tensor* out) {
    StatusOr<Tensor> x_full = Expand(context, x, plan.x_dims, plan);
    if (!x_full.ok()) return x_full.status();
    StatusOr<Tensor> y_full = Expand(context, y, plan.y_dims, plan);
    if (!y_full.ok()) return y_full.status();
    auto xf = Flat<T>(*x_full);
    auto yf = Flat<T>(*y_full);
    auto o = Flat<Out>(*out);
    EvaluateOnDevice(context, out->NumElements(),
                     [&](const auto& d) { o.device(d) = Functor::Apply(xf, yf); });
    return Status::OK();
  }

  // `input` with the output's shape: itself when it already has every element, else a temporary.
  static StatusOr<Tensor> Expand(OpKernelContext* context, const Tensor& input,
                                 const std::vector<int64_t>& dims, const BroadcastPlan& plan) {
    if (dims == plan.output_dims) return input;
    StatusOr<Tensor> full = context->AllocateTemp(input.dtype(), plan.output_shape);
    if (!full.ok()) return full.status();
    const int64_t width = plan.output_dims.back();
    const int64_t rows = plan.output_shape.num_elements() / width;
    auto copy_rows = [&](int64_t begin, int64_t end) {
      BroadcastRows(input.data<T>(), sizeof(T), dims, plan.output_dims, begin, end,
                    full->template data<T>());
    };
    if (rows * width < kMinParallelElements) {
      copy_rows(0, rows);
    } else {
      ParallelFor(context, rows, static_cast<double>(width), copy_rows);
    }
    return full;
  }
};

}  // namespace weft::kernels
