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
// a tiled copy of the broadcast row); and the general case as an Eigen broadcast of the collapsed
// shapes (rank 2 to 5). The output reuses an input buffer when it can.
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include "weft/framework/node_def_util.h"
#include "weft/kernels/math/bcast.h"
#include "weft/kernels/math/device_eval.h"

namespace weft::kernels {

// Collapsed broadcasts above this rank are refused (InvalidArgument).
inline constexpr int kMaxBroadcastRank = 5;
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
    if (plan->needs_broadcast && static_cast<int>(plan->output_dims.size()) > kMaxBroadcastRank) {
      return InvalidArgument(FormatNodeForError(def()), ": broadcasting ", x.shape(), " with ",
                             y.shape(), " needs ", plan->output_dims.size(),
                             " dimensions after merging; at most ", kMaxBroadcastRank,
                             " are supported");
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
      switch (plan->output_dims.size()) {
        case 2:
          ComputeBroadcast<2>(context, x, y, *plan, out);
          break;
        case 3:
          ComputeBroadcast<3>(context, x, y, *plan, out);
          break;
        case 4:
          ComputeBroadcast<4>(context, x, y, *plan, out);
          break;
        default:
          WEFT_CHECK(plan->output_dims.size() == 5) << plan->output_dims.size();
          ComputeBroadcast<5>(context, x, y, *plan, out);
          break;
      }
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

  template <int Rank>
  static void ComputeBroadcast(OpKernelContext* context, const Tensor& x, const Tensor& y,
                               const BroadcastPlan& plan, Tensor* out) {
    std::array<Eigen::DenseIndex, Rank> x_dims, y_dims, out_dims, x_bcast, y_bcast;
    for (int i = 0; i < Rank; ++i) {
      x_dims[i] = plan.x_dims[i];
      y_dims[i] = plan.y_dims[i];
      out_dims[i] = plan.output_dims[i];
      x_bcast[i] = plan.output_dims[i] / plan.x_dims[i];
      y_bcast[i] = plan.output_dims[i] / plan.y_dims[i];
    }
    auto xm = Shaped<T, Rank>(x, x_dims);
    auto ym = Shaped<T, Rank>(y, y_dims);
    auto o = Shaped<Out, Rank>(*out, out_dims);
    EvaluateOnDevice(context, out->NumElements(), [&](const auto& d) {
      o.device(d) = Functor::Apply(xm.broadcast(x_bcast), ym.broadcast(y_bcast));
    });
  }
};

}  // namespace weft::kernels
