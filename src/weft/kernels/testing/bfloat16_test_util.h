// What the bfloat16 kernel tests share: random bfloat16 tensors, their exact float32 widening, and
// a scope that forces the float32 fallback of the bfloat16 products. Tests only.
#pragma once

#include <cstdint>
#include <random>

#include "weft/core/bfloat16.h"
#include "weft/core/tensor.h"
#include "weft/kernels/gemm_bf16.h"

namespace weft::kernels::testing {

// Uniform values in [-range, range), rounded to bfloat16.
inline Tensor RandomBFloat16(const TensorShape& shape, uint32_t seed, float range = 2) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(-range, range);
  Tensor t(DataType::kBFloat16, shape);
  for (bfloat16& v : t.flat<bfloat16>()) v = bfloat16(uniform(engine));
  return t;
}

// A float32 copy of a bfloat16 tensor (exact); a float32 tensor as it is.
inline Tensor Widened(const Tensor& t) {
  if (t.dtype() == DataType::kFloat) return t;
  Tensor out(DataType::kFloat, t.shape());
  BFloat16ToFloat(t.flat<bfloat16>(), out.data<float>());
  return out;
}

// Forces the float32 fallback (or not) for its lifetime, then lets the CPU decide again.
class ScopedBFloat16Fallback {
 public:
  explicit ScopedBFloat16Fallback(bool force) { ForceBFloat16GemmFallbackForTesting(force); }
  ~ScopedBFloat16Fallback() { ForceBFloat16GemmFallbackForTesting(false); }
  ScopedBFloat16Fallback(const ScopedBFloat16Fallback&) = delete;
  ScopedBFloat16Fallback& operator=(const ScopedBFloat16Fallback&) = delete;
};

}  // namespace weft::kernels::testing
