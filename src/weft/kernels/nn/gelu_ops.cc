// Gelu and GeluGrad on CPU, exact (erf) and approximate (tanh), each one fused element-wise pass
// (the reference builds gelu from several ops): an Eigen functor with a packet path, evaluated on
// the intra-op threads for large tensors (EvalSized), or for the exact form in float32 the AVX-512
// functions of simd_math.h where the CPU has them; and _FusedGelu, Gelu rounded to bfloat16 as it
// is written.
#include <algorithm>
#include <type_traits>

#include "weft/core/bfloat16.h"
#include "weft/framework/node_def_util.h"
#include "weft/kernels/eigen_support.h"
#include "weft/kernels/nn/gelu_math.h"
#include "weft/kernels/nn/nn_kernels.h"
#include "weft/kernels/nn/sized_eval.h"
#include "weft/kernels/simd_math.h"

namespace weft::kernels {
namespace {

using gelu::GeluFunctor;
using gelu::GeluGradFunctor;

// The exact GELU of float32 runs on AVX-512 (simd_math.h) where the CPU has it, in every kernel
// alike, so that fused and unfused graphs still compute the same values.
template <typename T>
bool UseSimdGelu(bool approximate) {
  return std::is_same_v<T, float> && !approximate && simd::SimdMathIsAvailable();
}

// fn(begin, end) over [0, n) in chunks of kChunk elements (the last shorter), on the intra-op
// threads when n is large; `cost` is cycles per element.
constexpr int64_t kChunk = 2048;

template <typename Fn>
void ForEachChunk(OpKernelContext* context, int64_t n, double cost, const Fn& fn) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  auto run = [&](int64_t first, int64_t last) {
    for (int64_t chunk = first; chunk < last; ++chunk) {
      fn(chunk * kChunk, std::min(n, (chunk + 1) * kChunk));
    }
  };
  if (n < kParallelElements) {
    run(0, chunks);
  } else {
    ParallelFor(context, chunks, cost * kChunk, run);
  }
}

template <typename T>
class GeluOp final : public OpKernel {
 public:
  explicit GeluOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("approximate", &approximate_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& features = context->input(0);
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->ForwardInputOrAllocateOutput({0}, 0, features.shape(), &output));
    const int64_t n = output->NumElements();
    if constexpr (std::is_same_v<T, float>) {
      if (UseSimdGelu<T>(approximate_)) {
        const float* x = features.data<float>();
        float* y = output->data<float>();
        ForEachChunk(context, n, 10,
                     [&](int64_t b, int64_t e) { simd::ExactGelu(x + b, e - b, y + b); });
        return Status::OK();
      }
    }
    auto x = Flat<T>(features);
    if (approximate_) {
      EvalSized(context, n, Flat<T>(*output), x.unaryExpr(GeluFunctor<T, true>()));
    } else {
      EvalSized(context, n, Flat<T>(*output), x.unaryExpr(GeluFunctor<T, false>()));
    }
    return Status::OK();
  }

 private:
  bool approximate_ = false;
};

template <typename T>
class GeluGradOp final : public OpKernel {
 public:
  explicit GeluGradOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("approximate", &approximate_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& gradients = context->input(0);
    const Tensor& features = context->input(1);
    if (!(gradients.shape() == features.shape())) {
      return InvalidArgument(FormatNodeForError(def()),
                             ": gradients and features must have the same shape, but are ",
                             gradients.shape(), " and ", features.shape());
    }
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(
        context->ForwardInputOrAllocateOutput({0, 1}, 0, features.shape(), &output));
    const int64_t n = output->NumElements();
    if constexpr (std::is_same_v<T, float>) {
      if (UseSimdGelu<T>(approximate_)) {
        const float* dy = gradients.data<float>();
        const float* x = features.data<float>();
        float* g = output->data<float>();
        ForEachChunk(context, n, 20, [&](int64_t b, int64_t e) {
          simd::MultiplyByExactGeluSlope(dy + b, x + b, e - b, g + b);
        });
        return Status::OK();
      }
    }
    auto g = Flat<T>(gradients);
    auto x = Flat<T>(features);
    if (approximate_) {
      EvalSized(context, n, Flat<T>(*output), g.binaryExpr(x, GeluGradFunctor<T, true>()));
    } else {
      EvalSized(context, n, Flat<T>(*output), g.binaryExpr(x, GeluGradFunctor<T, false>()));
    }
    return Status::OK();
  }

 private:
  bool approximate_ = false;
};

// _FusedGelu: Gelu of float32 features written as bfloat16, as a Cast after Gelu would round it, in
// one pass (chunks of a row of floats computed in cache, then rounded), where the two ops wrote
// and read a float32 tensor in between.
class FusedGeluOp final : public OpKernel {
 public:
  explicit FusedGeluOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("approximate", &approximate_));
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& features = context->input(0);
    Tensor* output = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, features.shape(), &output));
    const float* x = features.data<float>();
    bfloat16* y = output->data<bfloat16>();
    const bool simd = UseSimdGelu<float>(approximate_);
    ForEachChunk(context, features.NumElements(), simd ? 10 : 40, [&](int64_t b, int64_t e) {
      alignas(64) float values[kChunk];
      const int64_t size = e - b;
      Eigen::Map<const Eigen::ArrayXf> in(x + b, size);
      Eigen::Map<Eigen::ArrayXf> out(values, size);
      if (simd) {
        simd::ExactGelu(x + b, size, values);
      } else if (approximate_) {
        out = in.unaryExpr(GeluFunctor<float, true>());
      } else {
        out = in.unaryExpr(GeluFunctor<float, false>());
      }
      FloatToBFloat16({values, static_cast<size_t>(size)}, y + b);
    });
    return Status::OK();
  }

 private:
  bool approximate_ = false;
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<GeluOp<T>>(KernelDef("Gelu", "CPU").TypeConstraint<T>("T"));
  registry.Register<GeluGradOp<T>>(KernelDef("GeluGrad", "CPU").TypeConstraint<T>("T"));
}

}  // namespace

void RegisterGeluKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
  registry.Register<FusedGeluOp>(KernelDef("_FusedGelu", "CPU"));
}

}  // namespace weft::kernels
