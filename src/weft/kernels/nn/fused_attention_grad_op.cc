// FusedAttentionGrad on CPU: FlashAttention-2's backward pass. The probabilities are recomputed a
// [kQueryBlock, kKeyBlock] tile at a time from the forward's logsumexp, never stored for the
// whole sequence. One task per (batch entry, head), so that the task owns every gradient it
// accumulates; with delta_i = dO_i . O_i (= sum_j P_ij dP_ij), for each key block j and each query
// block i that attends it:
//   P    = exp(scale * Q_i K_j^T - logsumexp_i), 0 where masked     [rows, kb]   GEMM
//   dV_j += P^T dO_i                                                [kb, Dv]     GEMM
//   dP   = dO_i V_j^T                                               [rows, kb]   GEMM
//   dS   = P * (dP - delta_i)
//   dQ_i += scale * dS K_j                                          [rows, D]    GEMM
//   dK_j += scale * dS^T Q_i                                        [kb, D]      GEMM
// Keys no row attends (past key_lengths) get zero gradients, and under causal a key block starts
// from the first query row that sees it. Fewer (batch, head) pairs than intra-op threads leave
// threads idle: splitting a head would need its dQ (or dK and dV) summed across threads.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "weft/kernels/eigen_support.h"
#include "weft/kernels/gemm.h"
#include "weft/kernels/nn/fused_attention.h"
#include "weft/kernels/nn/nn_kernels.h"

namespace weft::kernels {
namespace {

using attention::AttentionProblem;
using attention::GradTensors;
using attention::kKeyBlock;
using attention::kQueryBlock;
using attention::ScratchVector;

// A task's scratch: the probability and probability-gradient tiles, and delta per query row.
template <typename T>
struct GradScratch {
  GradScratch(int64_t key_block, int64_t query_time)
      : p(kQueryBlock * key_block), dp(kQueryBlock * key_block), delta(query_time) {}
  ScratchVector<T> p;
  ScratchVector<T> dp;
  ScratchVector<T> delta;
};

// The gradients of head `bh` (= b * heads + h).
template <typename T>
void BackpropHead(const AttentionProblem& p, const GradTensors<T>& t, int64_t bh,
                  GradScratch<T>& scratch) {
  const int64_t b = bh / p.heads;
  const int64_t d = p.depth, dv = p.value_depth;
  const int64_t ld = p.RowStride(d), ldv = p.RowStride(dv);
  const T scale = static_cast<T>(p.scale);
  const T* q = t.query + p.HeadOffset(bh, p.query_time, d);
  const T* k = t.key + p.HeadOffset(bh, p.key_time, d);
  const T* v = t.value + p.HeadOffset(bh, p.key_time, dv);
  const T* o = t.output + p.HeadOffset(bh, p.query_time, dv);
  const T* lse = t.logsumexp + bh * p.query_time;
  const T* dout = t.output_gradient + p.HeadOffset(bh, p.query_time, dv);
  T* dq = t.query_gradient + p.HeadOffset(bh, p.query_time, d);
  T* dk = t.key_gradient + p.HeadOffset(bh, p.key_time, d);
  T* dvalue = t.value_gradient + p.HeadOffset(bh, p.key_time, dv);
  T* prob = scratch.p.data();
  T* dprob = scratch.dp.data();
  T* delta = scratch.delta.data();
  for (int64_t i = 0; i < p.query_time; ++i) std::fill_n(dq + i * ld, d, T(0));
  for (int64_t j = 0; j < p.key_time; ++j) {
    std::fill_n(dk + j * ld, d, T(0));
    std::fill_n(dvalue + j * ldv, dv, T(0));
  }
  if (p.query_time == 0) return;
  for (int64_t i = 0; i < p.query_time; ++i) {
    delta[i] = attention::RowDelta(dout + i * ldv, o + i * ldv, dv);
  }
  const int64_t keys = std::max<int64_t>(0, p.KeyLimit(b, p.query_time - 1));
  for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
    const int64_t kb = std::min(kKeyBlock, keys - j0);
    // The first row attending key j0: KeyLimit(b, i) > j0 holds for every i when not causal
    // (j0 < keys <= the key length), and from i = j0 - (key_time - query_time) when causal.
    const int64_t first_row = p.causal ? std::max<int64_t>(0, j0 - (p.key_time - p.query_time)) : 0;
    for (int64_t i0 = first_row; i0 < p.query_time; i0 += kQueryBlock) {
      const int64_t rows = std::min(kQueryBlock, p.query_time - i0);
      Gemm(GemmDims{.m = rows, .n = kb, .k = d, .transpose_b = true}, scale, q + i0 * ld, ld,
           k + j0 * ld, ld, T(0), prob, kb);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t valid = std::clamp<int64_t>(p.KeyLimit(b, i0 + r) - j0, 0, kb);
        attention::ExpShiftedRow(prob + r * kb, valid, kb, lse[i0 + r]);
      }
      Gemm(GemmDims{.m = kb, .n = dv, .k = rows, .transpose_a = true}, T(1), prob, kb,
           dout + i0 * ldv, ldv, T(1), dvalue + j0 * ldv, ldv);
      Gemm(GemmDims{.m = rows, .n = kb, .k = dv, .transpose_b = true}, T(1), dout + i0 * ldv, ldv,
           v + j0 * ldv, ldv, T(0), dprob, kb);
      for (int64_t r = 0; r < rows; ++r) {
        attention::ScoreGradientRow(prob + r * kb, dprob + r * kb, kb, delta[i0 + r]);
      }
      Gemm(GemmDims{.m = rows, .n = d, .k = kb}, scale, dprob, kb, k + j0 * ld, ld, T(1),
           dq + i0 * ld, ld);
      Gemm(GemmDims{.m = kb, .n = d, .k = rows, .transpose_a = true}, scale, dprob, kb, q + i0 * ld,
           ld, T(1), dk + j0 * ld, ld);
    }
  }
}

template <typename T>
class FusedAttentionGradOp final : public OpKernel {
 public:
  explicit FusedAttentionGradOp(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(attention::ReadAttentionAttrs(context, &attrs_));
  }

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(const AttentionProblem p,
                          attention::MakeAttentionProblem(*this, context, attrs_));
    Tensor* dq = nullptr;
    Tensor* dk = nullptr;
    Tensor* dv = nullptr;
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(0, context->input(0).shape(), &dq));
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(1, context->input(1).shape(), &dk));
    WEFT_RETURN_IF_ERROR(context->AllocateOutput(2, context->input(2).shape(), &dv));
    const int64_t tasks = p.batch * p.heads;
    if (tasks == 0) return Status::OK();
    const GradTensors<T> t{.query = context->input(0).data<T>(),
                           .key = context->input(1).data<T>(),
                           .value = context->input(2).data<T>(),
                           .output = context->input(4).data<T>(),
                           .logsumexp = context->input(5).data<T>(),
                           .output_gradient = context->input(6).data<T>(),
                           .query_gradient = dq->data<T>(),
                           .key_gradient = dk->data<T>(),
                           .value_gradient = dv->data<T>()};
    bool bfloat16 = false;
    if constexpr (std::is_same_v<T, float>) bfloat16 = attention::UseBFloat16Products(attrs_);
    const int64_t key_block = std::clamp<int64_t>(p.key_time, 1, kKeyBlock);
    auto run = [&](int64_t begin, int64_t end) {
      if constexpr (std::is_same_v<T, float>) {
        if (bfloat16) {
          attention::BFloat16Scratch scratch;
          for (int64_t bh = begin; bh < end; ++bh)
            attention::BackpropHeadBFloat16(p, t, bh, scratch);
          return;
        }
      }
      GradScratch<T> scratch(key_block, p.query_time);
      for (int64_t bh = begin; bh < end; ++bh) BackpropHead(p, t, bh, scratch);
    };
    if (tasks == 1 || !attention::TasksMayRunConcurrently<T>(context)) {
      run(0, tasks);
      return Status::OK();
    }
    // Cycles per head: five GEMMs at ~8 multiply-adds per cycle (32 in bfloat16), and a few per
    // exponential.
    const double scores = static_cast<double>(p.query_time) * static_cast<double>(p.key_time);
    const double rate = bfloat16 ? 32 : 8;
    ParallelFor(context, tasks,
                scores * (static_cast<double>(3 * p.depth + 2 * p.value_depth) / rate + 6), run);
    return Status::OK();
  }

 private:
  attention::AttentionAttrs attrs_;
};

}  // namespace

void RegisterFusedAttentionGradKernels(KernelRegistry& registry) {
  registry.Register<FusedAttentionGradOp<float>>(
      KernelDef("FusedAttentionGrad", "CPU").TypeConstraint<float>("T"));
  registry.Register<FusedAttentionGradOp<double>>(
      KernelDef("FusedAttentionGrad", "CPU").TypeConstraint<double>("T"));
}

}  // namespace weft::kernels
