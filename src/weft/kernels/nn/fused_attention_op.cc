// FusedAttention on CPU (semantics in ops/attention_ops.cc), streaming the softmax over blocks of
// keys as FlashAttention does, so that no [query_time, key_time] matrix is ever stored. One task
// per (batch entry, head, block of kQueryBlock query rows); for each key block j that some row of
// the block attends (the causal blocks above the diagonal and the keys past key_lengths are never
// touched), with per row a running maximum m and sum l:
//   S   = scale * Q_i K_j^T                          [rows, kb]   GEMM
//   m'  = max(m, max_j S)      P = exp(S - m'), 0 where masked
//   l   = l exp(m - m') + sum_j P       O_i *= exp(m - m')
//   O_i += P V_j                                    [rows, Dv]   GEMM
// then O_i /= l and logsumexp = m + log l. The output block itself is the accumulator, so a task
// needs only one [rows, kb] tile and m and l of scratch, allocated once per shard of tasks. Under
// layout BTHD a head's rows are every heads-th row of the [batch * time * heads, depth] operands:
// the GEMMs take that stride as their leading dimension, so no operand is copied.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "weft/kernels/eigen_support.h"
#include "weft/kernels/gemm.h"
#include "weft/kernels/nn/fused_attention.h"
#include "weft/kernels/nn/nn_kernels.h"

namespace weft::kernels {
namespace {

using attention::AttentionProblem;
using attention::ForwardTensors;
using attention::kKeyBlock;
using attention::kQueryBlock;
using attention::ScratchVector;

// A task's scratch: the score tile and each row's running maximum and sum.
template <typename T>
struct ForwardScratch {
  explicit ForwardScratch(int64_t key_block)
      : tile(kQueryBlock * key_block), row_max(kQueryBlock), row_sum(kQueryBlock) {}
  ScratchVector<T> tile;
  ScratchVector<T> row_max;
  ScratchVector<T> row_sum;
};

// Rows [first_row, first_row + kQueryBlock) (fewer at the end) of head `bh` (= b * heads + h).
template <typename T>
void AttendQueryBlock(const AttentionProblem& p, const ForwardTensors<T>& t, int64_t bh,
                      int64_t first_row, ForwardScratch<T>& scratch) {
  const int64_t rows = std::min(kQueryBlock, p.query_time - first_row);
  const int64_t b = bh / p.heads;
  const int64_t dv = p.value_depth;
  const int64_t ldq = p.RowStride(p.depth), ldv = p.RowStride(dv);
  const T* q = t.query + p.HeadOffset(bh, p.query_time, p.depth) + first_row * ldq;
  const T* k = t.key + p.HeadOffset(bh, p.key_time, p.depth);
  const T* v = t.value + p.HeadOffset(bh, p.key_time, dv);
  T* out = t.output + p.HeadOffset(bh, p.query_time, dv) + first_row * ldv;
  T* lse = t.logsumexp + bh * p.query_time + first_row;
  T* tile = scratch.tile.data();
  T* row_max = scratch.row_max.data();
  T* row_sum = scratch.row_sum.data();
  for (int64_t r = 0; r < rows; ++r) std::fill_n(out + r * ldv, dv, T(0));
  std::fill_n(row_max, rows, -std::numeric_limits<T>::infinity());
  std::fill_n(row_sum, rows, T(0));
  // The block's last row attends the most keys.
  const int64_t keys = std::max<int64_t>(0, p.KeyLimit(b, first_row + rows - 1));
  for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
    const int64_t kb = std::min(kKeyBlock, keys - j0);
    Gemm(GemmDims{.m = rows, .n = kb, .k = p.depth, .transpose_b = true}, static_cast<T>(p.scale),
         q, ldq, k + j0 * ldq, ldq, T(0), tile, kb);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t valid = std::clamp<int64_t>(p.KeyLimit(b, first_row + r) - j0, 0, kb);
      attention::AccumulateRowBlock(tile + r * kb, valid, kb, row_max[r], row_sum[r], out + r * ldv,
                                    dv);
    }
    Gemm(GemmDims{.m = rows, .n = dv, .k = kb}, T(1), tile, kb, v + j0 * ldv, ldv, T(1), out, ldv);
  }
  for (int64_t r = 0; r < rows; ++r) {
    attention::FinishRow(row_max[r], row_sum[r], out + r * ldv, dv, lse + r);
  }
}

template <typename T>
class FusedAttentionOp final : public OpKernel {
 public:
  explicit FusedAttentionOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(attention::ReadAttentionAttrs(context, &attrs_));
  }

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(const AttentionProblem p,
                          attention::MakeAttentionProblem(*this, context, attrs_));
    Tensor* output = nullptr;
    Tensor* logsumexp = nullptr;
    const TensorShape output_shape =
        p.time_major ? TensorShape({p.batch, p.query_time, p.heads, p.value_depth})
                     : TensorShape({p.batch, p.heads, p.query_time, p.value_depth});
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, output_shape, &output));
    WEFT_RETURN_IF_ERROR(
        context->AllocateOutput(1, TensorShape({p.batch, p.heads, p.query_time}), &logsumexp));
    const ForwardTensors<T> t{.query = context->input(0).data<T>(),
                              .key = context->input(1).data<T>(),
                              .value = context->input(2).data<T>(),
                              .output = output->data<T>(),
                              .logsumexp = logsumexp->data<T>()};
    if constexpr (std::is_same_v<T, float>) {
      if (attention::UseBFloat16Products(attrs_)) return ComputeBFloat16(context, p, t);
    }
    const int64_t query_blocks = (p.query_time + kQueryBlock - 1) / kQueryBlock;
    const int64_t tasks = p.batch * p.heads * query_blocks;
    if (tasks == 0) return Status::OK();
    const int64_t key_block = std::clamp<int64_t>(p.key_time, 1, kKeyBlock);
    auto run = [&](int64_t begin, int64_t end) {
      ForwardScratch<T> scratch(key_block);
      for (int64_t task = begin; task < end; ++task) {
        AttendQueryBlock(p, t, task / query_blocks, task % query_blocks * kQueryBlock, scratch);
      }
    };
    if (tasks == 1 || !attention::TasksMayRunConcurrently<T>(context)) {
      run(0, tasks);
      return Status::OK();
    }
    // Cycles per task: its GEMMs at ~8 multiply-adds per cycle, and a few per exponential.
    const double keys = static_cast<double>(p.key_time);
    ParallelFor(context, tasks,
                kQueryBlock * keys * (static_cast<double>(p.depth + p.value_depth) / 8 + 4), run);
    return Status::OK();
  }

 private:
  // One task per head (fused_attention_bf16.cc), so that each head's operands are packed once.
  Status ComputeBFloat16(OpKernelContext* context, const AttentionProblem& p,
                         const ForwardTensors<float>& t) {
    const int64_t tasks = p.batch * p.heads;
    if (tasks == 0) return Status::OK();
    auto run = [&](int64_t begin, int64_t end) {
      attention::BFloat16Scratch scratch;
      for (int64_t bh = begin; bh < end; ++bh) attention::AttendHeadBFloat16(p, t, bh, scratch);
    };
    if (tasks == 1 || context->device()->intra_op_threads() <= 1) {
      run(0, tasks);
      return Status::OK();
    }
    // Cycles per head: its products at ~32 multiply-adds per cycle, a few per exponential.
    const double scores = static_cast<double>(p.query_time) * static_cast<double>(p.key_time);
    ParallelFor(context, tasks, scores * (static_cast<double>(p.depth + p.value_depth) / 32 + 4),
                run);
    return Status::OK();
  }

  attention::AttentionAttrs attrs_;
};

}  // namespace

void RegisterFusedAttentionKernels(KernelRegistry& registry) {
  registry.Register<FusedAttentionOp<float>>(
      KernelDef("FusedAttention", "CPU").TypeConstraint<float>("T"));
  registry.Register<FusedAttentionOp<double>>(
      KernelDef("FusedAttention", "CPU").TypeConstraint<double>("T"));
}

}  // namespace weft::kernels
