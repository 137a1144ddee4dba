// Broadcast plans and gradient reduction axes; see bcast.h.
#include "weft/kernels/math/bcast.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "weft/core/str_util.h"

namespace weft::kernels {
namespace {

Status Incompatible(std::span<const int64_t> a, std::span<const int64_t> b) {
  return InvalidArgument("incompatible shapes: [", StrJoin(a, ","), "] vs. [", StrJoin(b, ","),
                         "]");
}

// The size of dimension i of `dims` right-aligned to `rank` (1 where `dims` is padded).
int64_t PaddedDim(std::span<const int64_t> dims, size_t rank, size_t i) {
  size_t pad = rank - dims.size();
  return i < pad ? 1 : dims[i - pad];
}

// Writes `count` copies of the `element_size`-byte value at `value` to `destination`.
void FillElements(const char* value, int64_t element_size, int64_t count, char* destination) {
  auto fill = [&]<typename Word>(Word) {
    Word word;
    std::memcpy(&word, value, sizeof(Word));
    Word* out = reinterpret_cast<Word*>(destination);
    std::fill_n(out, count, word);
  };
  switch (element_size) {
    case 1:
      return fill(uint8_t{});
    case 2:
      return fill(uint16_t{});
    case 4:
      return fill(uint32_t{});
    case 8:
      return fill(uint64_t{});
    default:
      for (int64_t i = 0; i < count; ++i) {
        std::memcpy(destination + i * element_size, value, element_size);
      }
  }
}

}  // namespace

void BroadcastRows(const void* source, int64_t element_size,
                   const std::vector<int64_t>& source_dims, const std::vector<int64_t>& output_dims,
                   int64_t first_row, int64_t end_row, void* destination) {
  const size_t rank = output_dims.size();
  if (rank == 0 || first_row >= end_row) return;
  const int64_t width = output_dims[rank - 1];
  const bool full_rows = source_dims[rank - 1] == width;
  // Source strides in elements over the outer dimensions; 0 where the source is broadcast.
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = full_rows ? width : 1;
  for (size_t i = rank - 1; i-- > 0;) {
    strides[i] = source_dims[i] == 1 ? 0 : stride;
    stride *= source_dims[i];
  }
  // The outer index of first_row, as an odometer over dims [0, rank-1).
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t rest = first_row, i = static_cast<int64_t>(rank) - 2; i >= 0; --i) {
    index[i] = rest % output_dims[i];
    rest /= output_dims[i];
    offset += index[i] * strides[i];
  }
  const char* in = static_cast<const char*>(source);
  char* out = static_cast<char*>(destination) + first_row * width * element_size;
  for (int64_t row = first_row; row < end_row; ++row, out += width * element_size) {
    if (full_rows) {
      std::memcpy(out, in + offset * element_size, width * element_size);
    } else {
      FillElements(in + offset * element_size, element_size, width, out);
    }
    for (int64_t i = static_cast<int64_t>(rank) - 2; i >= 0; --i) {
      offset += strides[i];
      if (++index[i] < output_dims[i]) break;
      offset -= strides[i] * output_dims[i];
      index[i] = 0;
    }
  }
}

StatusOr<BroadcastPlan> MakeBroadcastPlan(const TensorShape& x, const TensorShape& y) {
  const std::vector<int64_t>& xs = x.dim_sizes();
  const std::vector<int64_t>& ys = y.dim_sizes();
  const size_t rank = std::max(xs.size(), ys.size());
  BroadcastPlan plan;
  std::vector<int64_t> out(rank);
  // Which side is broadcast in the current collapsed group: bit 0 for x, bit 1 for y.
  int group_kind = -1;
  for (size_t i = 0; i < rank; ++i) {
    int64_t dx = PaddedDim(xs, rank, i), dy = PaddedDim(ys, rank, i);
    if (dx != dy && dx != 1 && dy != 1) return Incompatible(xs, ys);
    out[i] = dx == 1 ? dy : dx;
    if (out[i] == 1) continue;
    int kind = (dx != out[i] ? 1 : 0) | (dy != out[i] ? 2 : 0);
    if (kind != 0) plan.needs_broadcast = true;
    if (kind == group_kind) {
      plan.x_dims.back() *= dx;
      plan.y_dims.back() *= dy;
      plan.output_dims.back() *= out[i];
    } else {
      plan.x_dims.push_back(dx);
      plan.y_dims.push_back(dy);
      plan.output_dims.push_back(out[i]);
      group_kind = kind;
    }
  }
  plan.output_shape = TensorShape(std::move(out));
  if (!plan.needs_broadcast) {
    plan.x_dims.clear();
    plan.y_dims.clear();
    plan.output_dims.clear();
  }
  return plan;
}

StatusOr<std::pair<std::vector<int64_t>, std::vector<int64_t>>> BroadcastGradientAxes(
    const std::vector<int64_t>& s0, const std::vector<int64_t>& s1) {
  std::pair<std::vector<int64_t>, std::vector<int64_t>> axes;
  if (s0 == s1) return axes;
  const size_t rank = std::max(s0.size(), s1.size());
  for (size_t i = 0; i < rank; ++i) {
    int64_t d0 = PaddedDim(s0, rank, i), d1 = PaddedDim(s1, rank, i);
    if (d0 != d1 && d0 != 1 && d1 != 1) return Incompatible(s0, s1);
    if (d0 == 1) axes.first.push_back(static_cast<int64_t>(i));
    if (d1 == 1) axes.second.push_back(static_cast<int64_t>(i));
  }
  return axes;
}

}  // namespace weft::kernels
