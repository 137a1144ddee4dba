// The shapes FusedAttention and FusedAttentionGrad (attention_ops.cc) take, checked in one place
// for both the shape functions and the CPU kernels so that a graph and a kernel report a bad input
// the same way: each input's rank, and every dimension two inputs share, naming the input at
// fault. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/framework/partial_shape.h"

namespace weft::ops {

// The dimensions of one attention problem; PartialShape::kUnknownDim where no input tells.
//   query [batch, heads, query_time, depth]     key   [batch, heads, key_time, depth]
//   value [batch, heads, key_time, value_depth] key_lengths [batch]
//   output, output_gradient [batch, heads, query_time, value_depth]
//   logsumexp [batch, heads, query_time]
struct AttentionDims {
  int64_t batch = PartialShape::kUnknownDim;
  int64_t heads = PartialShape::kUnknownDim;
  int64_t query_time = PartialShape::kUnknownDim;
  int64_t key_time = PartialShape::kUnknownDim;
  int64_t depth = PartialShape::kUnknownDim;
  int64_t value_depth = PartialShape::kUnknownDim;
};

// Where the time and head dimensions of query, key, value, output and output_gradient sit (the
// ops' `layout` attr): "BHTD" is [batch, heads, time, depth] as above; "BTHD" is [batch, time,
// heads, depth], which a projection's [batch * time, heads * depth] output has once reshaped, so a
// layer needs no transposes around the op. logsumexp is [batch, heads, query_time] in both.
enum class AttentionLayout { kBatchHeadsTime, kBatchTimeHeads };
// "BHTD" or "BTHD"; otherwise an InvalidArgument naming the value.
StatusOr<AttentionLayout> ParseAttentionLayout(std::string_view layout);

// `inputs` are the shapes of FusedAttention's 4 inputs (query, key, value, key_lengths) or of
// FusedAttentionGrad's 7 (those, then output, logsumexp, output_gradient). The dims they agree on,
// or an InvalidArgument without a node prefix (callers add theirs) naming the first input whose
// rank is wrong or whose dimension differs from an earlier input's, for example
// "key has depth 5 (dimension 3 of [2,3,7,5]), but query has 4".
// Under kBatchTimeHeads the dimension names follow that layout ("dimension 1 of ..." is the time).
StatusOr<AttentionDims> MergeAttentionShapes(
    const std::vector<PartialShape>& inputs,
    AttentionLayout layout = AttentionLayout::kBatchHeadsTime);

}  // namespace weft::ops
