// What the FusedAttention and FusedAttentionGrad CPU kernels share (fused_attention_op.cc,
// fused_attention_grad_op.cc): their attrs, the checked geometry of one call with its key mask,
// the tile sizes, and the masked exponential of one row of scores. The ops' semantics are in
// ops/attention_ops.cc. Stateless apart from what a caller passes in; thread-safe.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "weft/framework/op_kernel.h"
#include "weft/kernels/gemm.h"
#include "weft/kernels/simd_math.h"
#include "weft/ops/attention_ops.h"

namespace weft::kernels::attention {

// The kernels work on tiles of kQueryBlock queries by kKeyBlock keys. 64 x 64 makes each tile's
// products 64 x 64 x depth GEMMs, long enough (~260k multiply-adds at depth 64) that a call's fixed
// cost stays a few percent of it, while one task's tiles (queries, keys, values, the score and
// probability-gradient tiles, the output block: six 16 KiB float tiles at depth 64) stay inside a
// core's L2. Under causal, the diagonal tiles' masked halves are computed and thrown away: 64 / (T
// + 64) of the work for T queries and keys (1/3 at 128, 1/9 at 512); 32-wide tiles would halve that
// but double the GEMM calls and their fixed costs.
inline constexpr int64_t kQueryBlock = 64;
inline constexpr int64_t kKeyBlock = 64;

// The attrs, read once when the kernel is built.
struct AttentionAttrs {
  bool causal = false;
  float scale = 0;  // 0 means 1/sqrt(depth)
  ops::AttentionLayout layout = ops::AttentionLayout::kBatchHeadsTime;
  // precision "bfloat16": the float32 kernel may multiply bfloat16 operands (see
  // fused_attention_bf16.cc); the float64 kernel refuses it when built.
  bool bfloat16_products = false;
};
Status ReadAttentionAttrs(OpKernelConstruction* context, AttentionAttrs* attrs);

// One call's geometry (see ops/attention_ops.h for the dimension names), with the batch entry b's
// key count read from key_lengths, which the kernel's input holds for the whole call.
struct AttentionProblem {
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t query_time = 0;
  int64_t key_time = 0;
  int64_t depth = 0;
  int64_t value_depth = 0;
  bool causal = false;
  double scale = 1;                      // resolved: never 0
  const int32_t* key_lengths = nullptr;  // [batch], each in [0, key_time]
  bool time_major = false;               // layout BTHD: [batch, time, heads, width] operands

  // Where the rows of head bh (= b * heads + h) start in an operand of `time` rows of `width`, and
  // the distance between consecutive rows: all the two layouts change.
  int64_t HeadOffset(int64_t bh, int64_t time, int64_t width) const {
    return time_major ? ((bh / heads) * time * heads + bh % heads) * width : bh * time * width;
  }
  int64_t RowStride(int64_t width) const { return time_major ? heads * width : width; }

  // Query row i of batch entry b attends exactly the keys j < KeyLimit(b, i); at most zero for a
  // row that attends none, and nondecreasing in i, so a block's last row attends the most keys.
  int64_t KeyLimit(int64_t b, int64_t i) const {
    const int64_t length = key_lengths[b];
    return causal ? std::min(length, i + key_time - query_time + 1) : length;
  }
};

// Checks `context`'s inputs (FusedAttention's 4 or FusedAttentionGrad's 7) as the shape function
// does, and each key length against key_time, and returns the problem; otherwise an
// InvalidArgument naming `kernel`'s node and the input at fault.
StatusOr<AttentionProblem> MakeAttentionProblem(const OpKernel& kernel, OpKernelContext* context,
                                                const AttentionAttrs& attrs);

// The operands of one call, as the kernels index them.
template <typename T>
struct ForwardTensors {
  const T* query;
  const T* key;
  const T* value;
  T* output;
  T* logsumexp;
};

template <typename T>
struct GradTensors {
  const T* query;
  const T* key;
  const T* value;
  const T* output;
  const T* logsumexp;
  const T* output_gradient;
  T* query_gradient;
  T* key_gradient;
  T* value_gradient;
};

// Whether independent tasks may call Gemm on several intra-op threads at once: always in float
// (oneDNN runs on the calling thread); in double only when OpenBLAS has no threads of its own,
// since it then takes one call at a time (gemm.h).
template <typename T>
bool TasksMayRunConcurrently(OpKernelContext* context) {
  return context->device()->intra_op_threads() > 1 &&
         (!std::is_same_v<T, double> || BlasIsSingleThreaded());
}

// Scratch tiles start where Eigen's packets align, as tensors do: Eigen peels a row's unaligned
// head off as scalar exp and sums, whose last bits differ from the packet ones, and a heap address
// that varied from task to task would make results depend on which thread ran what.
template <typename T>
using ScratchVector = std::vector<T, Eigen::aligned_allocator<T>>;

template <typename T>
using RowMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstRowMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// One row of `n` scores becomes probabilities: row[j] = exp(row[j] - shift) for j < valid and 0
// from there on (masked keys). Returns the sum of the row. A packet exp (AVX-512's in float32
// where the CPU has it, else Eigen's) keeps this to a few cycles per score: a score costs
// 2 * depth multiply-adds in the GEMMs, so a scalar exp would rival them at depth 64.
template <typename T>
T ExpShiftedRow(T* row, int64_t valid, int64_t n, T shift) {
  std::fill(row + valid, row + n, T(0));
  if (valid == 0) return T(0);
  if constexpr (std::is_same_v<T, float>) {
    // AVX-512 where the CPU has it: Eigen's packets are AVX2's in an x86-64-v3 build.
    if (simd::SimdMathIsAvailable()) return simd::ExpShiftedSum(row, valid, shift);
  }
  RowMap<T> p(row, valid);
  p = (p - shift).exp();
  return p.sum();
}

// One thread's scratch for the bfloat16-product path (fused_attention_bf16.cc): the packed
// operands of one head and the tiles of one block, grown to the largest head it has seen.
struct BFloat16Scratch {
  ScratchVector<uint32_t> query_rows, key_columns, value_pairs, key_pairs, gradient_rows,
      value_columns, gradient_columns, query_columns, staging, tile_rows, tile_pairs;
  ScratchVector<float> tile, second_tile, accumulator, row_max, row_sum, delta,
      key_gradient_columns, value_gradient_columns;
};

// FusedAttention's output and logsumexp rows of head `bh` (= b * heads + h) with bfloat16 products,
// and FusedAttentionGrad's gradients of that head; only where
// tile_bf16::TileGemmBFloat16IsAvailable().
void AttendHeadBFloat16(const AttentionProblem& p, const ForwardTensors<float>& t, int64_t bh,
                        BFloat16Scratch& scratch);
void BackpropHeadBFloat16(const AttentionProblem& p, const GradTensors<float>& t, int64_t bh,
                          BFloat16Scratch& scratch);

// Whether a kernel built with `attrs` multiplies in bfloat16: asked for and the CPU able; the first
// kernel asked for it on a CPU without AVX512-BF16 logs that it multiplies in float32 instead.
bool UseBFloat16Products(const AttentionAttrs& attrs);

// The online softmax's step for one row and one block of its n scores `s`, the first `valid`
// attended: s becomes the block's probabilities under the row's running maximum, the row's sum
// grows by them, and the row's sum and output accumulator (`width` values at `out`) are rescaled
// first when the block raises the maximum.
template <typename T>
void AccumulateRowBlock(T* s, int64_t valid, int64_t n, T& row_max, T& row_sum, T* out,
                        int64_t width) {
  if (valid == 0) {
    std::fill_n(s, n, T(0));
    return;
  }
  const T new_max = std::max(row_max, RowMap<T>(s, valid).maxCoeff());
  const T block_sum = ExpShiftedRow(s, valid, n, new_max);
  if (row_max == new_max) {
    row_sum += block_sum;
    return;
  }
  // Nothing was summed before the row's first block (its maximum was -inf).
  const T correction = std::exp(row_max - new_max);
  row_sum = row_sum * correction + block_sum;
  RowMap<T>(out, width) *= correction;
  row_max = new_max;
}

// A row's output accumulator divided by its sum, and its logsumexp; a row that attends no key gets
// output 0 and logsumexp +inf, which makes exp(score - logsumexp) 0 for every key.
template <typename T>
void FinishRow(T row_max, T row_sum, T* out, int64_t width, T* logsumexp) {
  if (row_sum > T(0)) {
    RowMap<T>(out, width) *= T(1) / row_sum;
    *logsumexp = row_max + std::log(row_sum);
  } else {
    std::fill_n(out, width, T(0));
    *logsumexp = std::numeric_limits<T>::infinity();
  }
}

// delta_i = dO_i . O_i (= sum_j P_ij dP_ij), the backward pass's per-row term.
template <typename T>
T RowDelta(const T* output_gradient, const T* output, int64_t width) {
  return (ConstRowMap<T>(output_gradient, width) * ConstRowMap<T>(output, width)).sum();
}

// One row of the scores' gradient in place of the probabilities' gradient: dS = P * (dP - delta).
template <typename T>
void ScoreGradientRow(const T* probabilities, T* gradient, int64_t n, T delta) {
  RowMap<T> ds(gradient, n);
  ds = ConstRowMap<T>(probabilities, n) * (ds - delta);
}

}  // namespace weft::kernels::attention
