// What the FusedAttention and FusedAttentionGrad CPU kernels share (fused_attention_op.cc,
// fused_attention_grad_op.cc): their attrs, the checked geometry of one call with its key mask,
// the tile sizes, and the masked exponential of one row of scores. The ops' semantics are in
// ops/attention_ops.cc. Stateless apart from what a caller passes in; thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "weft/framework/op_kernel.h"
#include "weft/kernels/gemm.h"
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
// from there on (masked keys). Returns the sum of the row. Eigen's packet exp keeps this to a few
// cycles per score: a score costs 2 * depth multiply-adds in the GEMMs, so a scalar exp would
// rival them at depth 64.
template <typename T>
T ExpShiftedRow(T* row, int64_t valid, int64_t n, T shift) {
  std::fill(row + valid, row + n, T(0));
  if (valid == 0) return T(0);
  RowMap<T> p(row, valid);
  p = (p - shift).exp();
  return p.sum();
}

}  // namespace weft::kernels::attention
