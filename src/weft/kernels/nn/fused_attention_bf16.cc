// FusedAttention and its gradient with bfloat16 products (precision "bfloat16", on a CPU with
// AVX512-BF16): the same block algorithms as fused_attention_op.cc and fused_attention_grad_op.cc,
// with every product's operands rounded to bfloat16 and summed in float32 by tile_bf16::Gemm,
// while scores, the softmax's running maximum and sum, logsumexp, delta and every accumulator stay
// float32 (the mixed_bfloat16 policy's "softmax statistics in float32"). At W6's shape a 64 x 64
// tile's product is ~260k multiply-adds; a oneDNN call for it costs about as much as the
// arithmetic, so the tiles are multiplied here directly.
//
// One task per (batch entry, head) in both directions, so that each operand of the head is rounded
// and packed once, in the layouts the products read (tile_gemm_bf16.h): for S = Q K^T, Q's rows as
// pairs along the depth and K^T packed the same way; for P V, V by pairs of keys; the gradients
// take dV^T = dO^T P and dK^T = Q^T dS (pairs of queries on both sides) and transpose them once at
// the end, so that no tile is ever transposed. Under causal, the products whose rows are queries
// stop, for each group of 12 rows of a diagonal tile, at the keys its last row attends.
#include <algorithm>
#include <limits>

#include "weft/kernels/nn/fused_attention.h"
#include "weft/kernels/tile_gemm_bf16.h"

namespace weft::kernels::attention {
namespace {

int64_t Pairs(int64_t n) { return (n + 1) / 2; }

// tile_bf16::Gemm's last flag: add to the output, or replace it.
constexpr bool kAccumulate = true;
constexpr bool kOverwrite = false;

template <typename T>
T* Sized(ScratchVector<T>& buffer, int64_t size) {
  if (static_cast<int64_t>(buffer.size()) < size) buffer.resize(size);
  return buffer.data();
}

// The rows of a tile in groups of kRowGroup (two of the micro-kernel's 6-row blocks), each with
// the keys of the tile its last row attends: under causal the products of a diagonal tile stop
// there instead of computing its masked half (a third of the work at 128 positions). fn(first row
// of the group within the tile, its rows, its keys) for each group that attends a key of the tile.
constexpr int64_t kRowGroup = 12;

template <typename Fn>
void ForEachRowGroup(const AttentionProblem& p, int64_t b, int64_t first_row, int64_t rows,
                     int64_t j0, int64_t kb, const Fn& fn) {
  for (int64_t g = 0; g < rows; g += kRowGroup) {
    const int64_t group_rows = std::min(kRowGroup, rows - g);
    const int64_t group_keys =
        std::clamp<int64_t>(p.KeyLimit(b, first_row + g + group_rows - 1) - j0, 0, kb);
    if (group_keys > 0) fn(g, group_rows, group_keys);
  }
}

// Zero rows [first, last) of an operand with rows of `width` `stride` apart.
void ZeroRows(float* rows, int64_t first, int64_t last, int64_t width, int64_t stride) {
  for (int64_t i = first; i < last; ++i) std::fill_n(rows + i * stride, width, 0.0f);
}

// A head's operands for the gradients, each rounded and packed once in the layout a product
// reads it (names say which: rows are pairs along a row, columns a transposed operand's rows,
// pairs interleave two rows).
struct PackedHead {
  const uint32_t *query_rows, *key_columns, *gradient_rows, *value_columns, *key_pairs,
      *gradient_columns, *query_columns;
};

PackedHead PackHeadForGradients(const AttentionProblem& p, const float* q, const float* k,
                                const float* dout, const float* v, int64_t keys,
                                BFloat16Scratch& scratch) {
  namespace tile = tile_bf16;
  const int64_t d = p.depth, dv = p.value_depth, tq = p.query_time;
  const int64_t d2 = Pairs(d), dv2 = Pairs(dv), tq2 = Pairs(tq);
  const int64_t ld = p.RowStride(d), ldv = p.RowStride(dv);
  uint32_t* query_rows = Sized(scratch.query_rows, tq * d2);
  uint32_t* key_columns = Sized(scratch.key_columns, d2 * keys);
  uint32_t* gradient_rows = Sized(scratch.gradient_rows, tq * dv2);
  uint32_t* value_columns = Sized(scratch.value_columns, dv2 * keys);
  uint32_t* key_pairs = Sized(scratch.key_pairs, Pairs(keys) * d);
  uint32_t* gradient_columns = Sized(scratch.gradient_columns, dv * tq2);
  uint32_t* query_columns = Sized(scratch.query_columns, d * tq2);
  uint32_t* staging = Sized(scratch.staging, std::max(keys, tq) * std::max(d, dv));
  tile::PackRows(q, ld, tq, d, query_rows, d2);
  tile::PackRows(k, ld, keys, d, staging, d2);
  tile::Transpose(staging, d2, keys, d2, key_columns, keys);
  tile::PackRows(dout, ldv, tq, dv, gradient_rows, dv2);
  tile::PackRows(v, ldv, keys, dv, staging, dv2);
  tile::Transpose(staging, dv2, keys, dv2, value_columns, keys);
  tile::PackRowPairs(k, ld, keys, d, key_pairs, d);
  tile::PackRowPairs(dout, ldv, tq, dv, staging, dv);
  tile::Transpose(staging, dv, tq2, dv, gradient_columns, tq2);
  tile::PackRowPairs(q, ld, tq, d, staging, d);
  tile::Transpose(staging, d, tq2, d, query_columns, tq2);
  return {query_rows, key_columns,      gradient_rows, value_columns,
          key_pairs,  gradient_columns, query_columns};
}

// A head's gradient sums, zeroed: dQ [query_time, depth], and dK and dV transposed ([depth, keys],
// [value_depth, keys]) as the products make them.
struct GradientSums {
  float *dq, *dk_columns, *dv_columns;
};

GradientSums ZeroedGradientSums(const AttentionProblem& p, int64_t keys, BFloat16Scratch& scratch) {
  const int64_t dq_size = p.query_time * p.depth;
  GradientSums sums{Sized(scratch.accumulator, dq_size),
                    Sized(scratch.key_gradient_columns, p.depth * keys),
                    Sized(scratch.value_gradient_columns, p.value_depth * keys)};
  std::fill_n(sums.dq, dq_size, 0.0f);
  std::fill_n(sums.dk_columns, p.depth * keys, 0.0f);
  std::fill_n(sums.dv_columns, p.value_depth * keys, 0.0f);
  return sums;
}

}  // namespace

void AttendHeadBFloat16(const AttentionProblem& p, const ForwardTensors<float>& t, int64_t bh,
                        BFloat16Scratch& scratch) {
  namespace tile = tile_bf16;
  const int64_t b = bh / p.heads;
  const int64_t d = p.depth, dv = p.value_depth, tq = p.query_time;
  const int64_t d2 = Pairs(d);
  const int64_t ld = p.RowStride(d), ldv = p.RowStride(dv);
  const float* q = t.query + p.HeadOffset(bh, tq, d);
  const float* k = t.key + p.HeadOffset(bh, p.key_time, d);
  const float* v = t.value + p.HeadOffset(bh, p.key_time, dv);
  float* out = t.output + p.HeadOffset(bh, tq, dv);
  float* lse = t.logsumexp + bh * tq;
  // The last query row attends the most keys; no packing goes past them.
  const int64_t keys = tq == 0 ? 0 : std::max<int64_t>(0, p.KeyLimit(b, tq - 1));
  uint32_t* query_rows = Sized(scratch.query_rows, tq * d2);
  uint32_t* key_columns = Sized(scratch.key_columns, d2 * keys);
  uint32_t* value_pairs = Sized(scratch.value_pairs, Pairs(keys) * dv);
  uint32_t* staging = Sized(scratch.staging, keys * d2);
  tile::PackRows(q, ld, tq, d, query_rows, d2);
  tile::PackRows(k, ld, keys, d, staging, d2);
  tile::Transpose(staging, d2, keys, d2, key_columns, keys);
  tile::PackRowPairs(v, ldv, keys, dv, value_pairs, dv);
  float* scores = Sized(scratch.tile, kQueryBlock * kKeyBlock);
  uint32_t* probabilities = Sized(scratch.tile_rows, kQueryBlock * Pairs(kKeyBlock));
  float* accumulator = Sized(scratch.accumulator, kQueryBlock * dv);
  float* row_max = Sized(scratch.row_max, kQueryBlock);
  float* row_sum = Sized(scratch.row_sum, kQueryBlock);
  for (int64_t i0 = 0; i0 < tq; i0 += kQueryBlock) {
    const int64_t rows = std::min(kQueryBlock, tq - i0);
    std::fill_n(accumulator, rows * dv, 0.0f);
    std::fill_n(row_max, rows, -std::numeric_limits<float>::infinity());
    std::fill_n(row_sum, rows, 0.0f);
    const int64_t block_keys = std::max<int64_t>(0, p.KeyLimit(b, i0 + rows - 1));
    for (int64_t j0 = 0; j0 < block_keys; j0 += kKeyBlock) {
      const int64_t kb = std::min(kKeyBlock, block_keys - j0);
      ForEachRowGroup(p, b, i0, rows, j0, kb, [&](int64_t g, int64_t group_rows, int64_t n) {
        tile::Gemm(group_rows, n, d2, query_rows + (i0 + g) * d2, d2, key_columns + j0, keys,
                   static_cast<float>(p.scale), kOverwrite, scores + g * kKeyBlock, kKeyBlock);
      });
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t valid = std::clamp<int64_t>(p.KeyLimit(b, i0 + r) - j0, 0, kb);
        AccumulateRowBlock(scores + r * kKeyBlock, valid, kb, row_max[r], row_sum[r],
                           accumulator + r * dv, dv);
      }
      // j0 is even, so key pair j0 / 2 starts the block; an odd kb's padding pairs with 0.
      tile::PackRows(scores, kKeyBlock, rows, kb, probabilities, Pairs(kb));
      ForEachRowGroup(p, b, i0, rows, j0, kb, [&](int64_t g, int64_t group_rows, int64_t n) {
        tile::Gemm(group_rows, dv, Pairs(n), probabilities + g * Pairs(kb), Pairs(kb),
                   value_pairs + j0 / 2 * dv, dv, 1, kAccumulate, accumulator + g * dv, dv);
      });
    }
    for (int64_t r = 0; r < rows; ++r) {
      FinishRow(row_max[r], row_sum[r], accumulator + r * dv, dv, lse + i0 + r);
      std::copy_n(accumulator + r * dv, dv, out + (i0 + r) * ldv);
    }
  }
}

void BackpropHeadBFloat16(const AttentionProblem& p, const GradTensors<float>& t, int64_t bh,
                          BFloat16Scratch& scratch) {
  namespace tile = tile_bf16;
  const int64_t b = bh / p.heads;
  const int64_t d = p.depth, dv = p.value_depth, tq = p.query_time;
  const int64_t d2 = Pairs(d), dv2 = Pairs(dv), tq2 = Pairs(tq);
  const int64_t ld = p.RowStride(d), ldv = p.RowStride(dv);
  const float scale = static_cast<float>(p.scale);
  const float* q = t.query + p.HeadOffset(bh, tq, d);
  const float* k = t.key + p.HeadOffset(bh, p.key_time, d);
  const float* v = t.value + p.HeadOffset(bh, p.key_time, dv);
  const float* o = t.output + p.HeadOffset(bh, tq, dv);
  const float* lse = t.logsumexp + bh * tq;
  const float* dout = t.output_gradient + p.HeadOffset(bh, tq, dv);
  float* dq = t.query_gradient + p.HeadOffset(bh, tq, d);
  float* dk = t.key_gradient + p.HeadOffset(bh, p.key_time, d);
  float* dvalue = t.value_gradient + p.HeadOffset(bh, p.key_time, dv);
  const int64_t keys = tq == 0 ? 0 : std::max<int64_t>(0, p.KeyLimit(b, tq - 1));
  // Keys no row attends get zero gradients; the others are written whole below.
  ZeroRows(dk, keys, p.key_time, d, ld);
  ZeroRows(dvalue, keys, p.key_time, dv, ldv);
  float* delta = Sized(scratch.delta, tq);
  for (int64_t i = 0; i < tq; ++i) delta[i] = RowDelta(dout + i * ldv, o + i * ldv, dv);
  const PackedHead packed = PackHeadForGradients(p, q, k, dout, v, keys, scratch);
  const GradientSums sums = ZeroedGradientSums(p, keys, scratch);
  float *dq_sum = sums.dq, *dk_columns = sums.dk_columns, *dv_columns = sums.dv_columns;
  float* prob = Sized(scratch.tile, kQueryBlock * kKeyBlock);
  float* dprob = Sized(scratch.second_tile, kQueryBlock * kKeyBlock);
  uint32_t* tile_rows = Sized(scratch.tile_rows, kQueryBlock * Pairs(kKeyBlock));
  uint32_t* tile_pairs = Sized(scratch.tile_pairs, Pairs(kQueryBlock) * kKeyBlock);
  for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
    const int64_t kb = std::min(kKeyBlock, keys - j0);
    // The first row attending key j0 (as in the float32 path), taken down to an even row so that
    // query pairs line up; a row before it attends nothing here and adds zeros.
    int64_t first_row = p.causal ? std::max<int64_t>(0, j0 - (p.key_time - tq)) : 0;
    first_row -= first_row % 2;
    for (int64_t i0 = first_row; i0 < tq; i0 += kQueryBlock) {
      const int64_t rows = std::min(kQueryBlock, tq - i0);
      ForEachRowGroup(p, b, i0, rows, j0, kb, [&](int64_t g, int64_t group_rows, int64_t n) {
        tile::Gemm(group_rows, n, d2, packed.query_rows + (i0 + g) * d2, d2,
                   packed.key_columns + j0, keys, scale, kOverwrite, prob + g * kKeyBlock,
                   kKeyBlock);
      });
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t valid = std::clamp<int64_t>(p.KeyLimit(b, i0 + r) - j0, 0, kb);
        ExpShiftedRow(prob + r * kKeyBlock, valid, kb, lse[i0 + r]);
      }
      // dV_j^T += dO_i^T P
      tile::PackRowPairs(prob, kKeyBlock, rows, kb, tile_pairs, kKeyBlock);
      tile::Gemm(dv, kb, Pairs(rows), packed.gradient_columns + i0 / 2, tq2, tile_pairs, kKeyBlock,
                 1, kAccumulate, dv_columns + j0, keys);
      // dP = dO_i V_j^T, then dS = P * (dP - delta) in its place
      ForEachRowGroup(p, b, i0, rows, j0, kb, [&](int64_t g, int64_t group_rows, int64_t n) {
        tile::Gemm(group_rows, n, dv2, packed.gradient_rows + (i0 + g) * dv2, dv2,
                   packed.value_columns + j0, keys, 1, kOverwrite, dprob + g * kKeyBlock,
                   kKeyBlock);
      });
      // Past a row's keys dP was not computed (or is left from another tile): dS is 0 there.
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t valid = std::clamp<int64_t>(p.KeyLimit(b, i0 + r) - j0, 0, kb);
        ScoreGradientRow(prob + r * kKeyBlock, dprob + r * kKeyBlock, valid, delta[i0 + r]);
        std::fill(dprob + r * kKeyBlock + valid, dprob + r * kKeyBlock + kb, 0.0f);
      }
      // dQ_i += scale * dS K_j
      tile::PackRows(dprob, kKeyBlock, rows, kb, tile_rows, Pairs(kb));
      ForEachRowGroup(p, b, i0, rows, j0, kb, [&](int64_t g, int64_t group_rows, int64_t n) {
        tile::Gemm(group_rows, d, Pairs(n), tile_rows + g * Pairs(kb), Pairs(kb),
                   packed.key_pairs + j0 / 2 * d, d, scale, kAccumulate, dq_sum + (i0 + g) * d, d);
      });
      // dK_j^T += scale * Q_i^T dS
      tile::PackRowPairs(dprob, kKeyBlock, rows, kb, tile_pairs, kKeyBlock);
      tile::Gemm(d, kb, Pairs(rows), packed.query_columns + i0 / 2, tq2, tile_pairs, kKeyBlock,
                 scale, kAccumulate, dk_columns + j0, keys);
    }
  }
  for (int64_t i = 0; i < tq; ++i) std::copy_n(dq_sum + i * d, d, dq + i * ld);
  tile::Transpose(dk_columns, keys, d, keys, dk, ld);
  tile::Transpose(dv_columns, keys, dv, keys, dvalue, ldv);
}

}  // namespace weft::kernels::attention
