// RandomUniform, RandomStandardNormal and TruncatedNormal kernels on the Philox generator.
//
// Output element i belongs to group i / G (G = 4 for float32, 2 for float64: one Philox block
// gives four 32-bit words). Group g of a run is computed from counter {g + base, attempt, 0} under
// a key made from (seed, seed2), where `base` advances by the number of groups after every run so
// that runs draw fresh values. A group depends on nothing else, so the tensor is filled by any
// number of threads with identical results. TruncatedNormal redraws a value beyond two standard
// deviations from the same group with the next `attempt`.
#include <atomic>
#include <random>

#include "weft/kernels/eigen_support.h"
#include "weft/kernels/state/philox.h"
#include "weft/kernels/state/state_kernels.h"
#include "weft/kernels/state/var.h"

namespace weft::kernels::state {
namespace {

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

// Four float or two double values of one group.
template <typename T>
struct Group {
  static constexpr int kSize = sizeof(T) == 4 ? 4 : 2;
  std::array<T, 4> values;
};

template <typename T, Distribution kDist>
Group<T> Generate(Philox4x32::Key key, uint64_t group, uint32_t attempt) {
  Philox4x32::Block bits = Philox4x32::Generate(
      {static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32), attempt, 0}, key);
  Group<T> out;
  if constexpr (sizeof(T) == 4) {
    for (int i = 0; i < 4; ++i) out.values[i] = UniformFloat(bits[i]);
  } else {
    out.values[0] = UniformDouble(bits[0], bits[1]);
    out.values[1] = UniformDouble(bits[2], bits[3]);
  }
  if constexpr (kDist != Distribution::kUniform) {
    for (int i = 0; i < Group<T>::kSize; i += 2) {
      BoxMuller(out.values[i], out.values[i + 1], &out.values[i], &out.values[i + 1]);
    }
  }
  return out;
}

// Writes elements [begin, end) of a run whose first group is `base`.
template <typename T, Distribution kDist>
void Fill(Philox4x32::Key key, uint64_t base, int64_t begin, int64_t end, T* out) {
  constexpr int kSize = Group<T>::kSize;
  int64_t i = begin;
  while (i < end) {
    int64_t group = i / kSize;
    Group<T> values = Generate<T, kDist>(key, base + group, 0);
    int64_t group_end = std::min<int64_t>(end, (group + 1) * kSize);
    for (; i < group_end; ++i) {
      int lane = static_cast<int>(i % kSize);
      T value = values.values[lane];
      if constexpr (kDist == Distribution::kTruncatedNormal) {
        for (uint32_t attempt = 1; std::abs(value) >= T(2); ++attempt) {
          value = Generate<T, kDist>(key, base + group, attempt).values[lane];
        }
      }
      out[i] = value;
    }
  }
}

// shape: [rank] int32/int64 dims -> output of that shape.
template <typename T, Distribution kDist>
class RandomOp final : public OpKernel {
 public:
  explicit RandomOp(OpKernelConstruction* context) : OpKernel(context) {
    int64_t seed = 0, seed2 = 0;
    context->SetStatus(context->GetAttr("seed", &seed));
    context->SetStatus(context->GetAttr("seed2", &seed2));
    if (seed == 0 && seed2 == 0) {
      std::random_device device;
      key_ = {device(), device()};
    } else {
      key_ = KeyFromSeeds(seed, seed2);
    }
  }

  Status Compute(OpKernelContext* context) override {
    const Tensor& shape_tensor = context->input(0);
    if (shape_tensor.dims() != 1) {
      return NodeError(*this, "shape must be a vector, but has shape ", shape_tensor.shape());
    }
    std::vector<int64_t> dims(static_cast<size_t>(shape_tensor.NumElements()));
    for (size_t i = 0; i < dims.size(); ++i) {
      dims[i] = shape_tensor.dtype() == DataType::kInt32 ? shape_tensor.data<int32_t>()[i]
                                                         : shape_tensor.data<int64_t>()[i];
    }
    StatusOr<TensorShape> shape = TensorShape::Create(dims);
    if (!shape.ok()) {
      return NodeError(*this, "bad shape [", StrJoin(dims, ","), "]: ", shape.status().message());
    }
    Tensor* out;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, *shape, &out));
    int64_t n = out->NumElements();
    constexpr int kSize = Group<T>::kSize;
    uint64_t groups = static_cast<uint64_t>((n + kSize - 1) / kSize);
    uint64_t base = next_group_.fetch_add(groups, std::memory_order_relaxed);
    T* data = out->data<T>();
    if (n >= kMinParallelElements) {
      // Shards cover whole groups, so no group is generated twice.
      ParallelFor(context, static_cast<int64_t>(groups), 400, [&](int64_t begin, int64_t end) {
        Fill<T, kDist>(key_, base, begin * kSize, std::min(n, end * kSize), data);
      });
    } else {
      Fill<T, kDist>(key_, base, 0, n, data);
    }
    return Status::OK();
  }

 private:
  Philox4x32::Key key_;
  // The first group of the next run. Compute advances it (atomically) so every run draws new
  // values; a fresh kernel (a new session) starts again from 0.
  std::atomic<uint64_t> next_group_{0};
};

template <typename T>
void RegisterForType(KernelRegistry& registry) {
  registry.Register<RandomOp<T, Distribution::kUniform>>(
      KernelDef("RandomUniform", "CPU").TypeConstraint<T>("dtype"));
  registry.Register<RandomOp<T, Distribution::kNormal>>(
      KernelDef("RandomStandardNormal", "CPU").TypeConstraint<T>("dtype"));
  registry.Register<RandomOp<T, Distribution::kTruncatedNormal>>(
      KernelDef("TruncatedNormal", "CPU").TypeConstraint<T>("dtype"));
}

}  // namespace

void RegisterRandomKernels(KernelRegistry& registry) {
  RegisterForType<float>(registry);
  RegisterForType<double>(registry);
}

}  // namespace weft::kernels::state
