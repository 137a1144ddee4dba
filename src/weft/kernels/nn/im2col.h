// im2col and col2im for NHWC convolutions, working on ranges of "output rows": unit u stands for
// image u / out_rows, output row u % out_rows, and owns out_cols rows of the column matrix, each a
// patch of patch_size() = window_rows * window_cols * in_depth values ordered (kh, kw, channel),
// the order of a [KH, KW, Cin, Cout] filter's rows. Cells of a window outside the image (padding)
// read as zero. These are plain loops over memory; callers shard the ranges over threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "weft/kernels/nn/window_geometry.h"

namespace weft::kernels {

// Writes the patches of units [begin, end) to `col`, whose row 0 is the first row of unit
// `first_unit` (begin >= first_unit).
template <typename T>
void Im2Col(const T* input, const SpatialGeometry& g, int64_t first_unit, int64_t begin,
            int64_t end, T* col) {
  const int64_t depth = g.in_depth;
  const int64_t row_len = g.window_cols * depth;  // one kh slice of a patch
  const int64_t patch = g.patch_size();
  for (int64_t unit = begin; unit < end; ++unit) {
    const int64_t image = unit / g.out_rows;
    const int64_t out_row = unit % g.out_rows;
    const T* image_data = input + image * g.in_rows * g.in_cols * depth;
    T* dst_unit = col + (unit - first_unit) * g.out_cols * patch;
    const int64_t in_row0 = out_row * g.stride_rows - g.pad_top;
    for (int64_t out_col = 0; out_col < g.out_cols; ++out_col) {
      T* dst = dst_unit + out_col * patch;
      const int64_t in_col0 = out_col * g.stride_cols - g.pad_left;
      const int64_t kw_begin = std::max<int64_t>(0, -in_col0);
      const int64_t kw_end = std::min<int64_t>(g.window_cols, g.in_cols - in_col0);
      for (int64_t kh = 0; kh < g.window_rows; ++kh, dst += row_len) {
        const int64_t in_row = in_row0 + kh;
        if (in_row < 0 || in_row >= g.in_rows || kw_begin >= kw_end) {
          std::fill(dst, dst + row_len, T(0));
          continue;
        }
        std::fill(dst, dst + kw_begin * depth, T(0));
        const T* src = image_data + (in_row * g.in_cols + in_col0 + kw_begin) * depth;
        std::copy(src, src + (kw_end - kw_begin) * depth, dst + kw_begin * depth);
        std::fill(dst + kw_end * depth, dst + row_len, T(0));
      }
    }
  }
}

// The input rows [first_row, last_row) of `image` that units [unit_begin, unit_end) read.
inline void InputRowsOfUnits(const SpatialGeometry& g, int64_t image, int64_t unit_begin,
                             int64_t unit_end, int64_t* first_row, int64_t* last_row) {
  const int64_t out_begin = std::max(unit_begin, image * g.out_rows) - image * g.out_rows;
  const int64_t out_end = std::min(unit_end, (image + 1) * g.out_rows) - image * g.out_rows;
  *first_row = std::max<int64_t>(0, out_begin * g.stride_rows - g.pad_top);
  *last_row =
      std::min<int64_t>(g.in_rows, (out_end - 1) * g.stride_rows - g.pad_top + g.window_rows);
}

// Adds the column rows of units [unit_begin, unit_end) (col row 0 belongs to unit_begin) back into
// `input_grad` at the positions they were read from, for the input rows [row_begin, row_end)
// counted over the whole batch (row r is image r / in_rows, row r % in_rows). Each input row is
// written only by the call that owns it, so shards of rows may run concurrently.
template <typename T>
void Col2ImRows(const T* col, const SpatialGeometry& g, int64_t unit_begin, int64_t unit_end,
                int64_t row_begin, int64_t row_end, T* input_grad) {
  const int64_t depth = g.in_depth;
  const int64_t patch = g.patch_size();
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int64_t image = row / g.in_rows;
    const int64_t in_row = row % g.in_rows;
    T* dst_row = input_grad + row * g.in_cols * depth;
    // Output rows whose window covers in_row: out * stride - pad_top + kh == in_row.
    const int64_t shifted = in_row + g.pad_top;
    int64_t out_first =
        shifted >= g.window_rows ? (shifted - g.window_rows) / g.stride_rows + 1 : 0;
    int64_t out_last = std::min<int64_t>(g.out_rows - 1, shifted / g.stride_rows);
    out_first = std::max(out_first, unit_begin - image * g.out_rows);
    out_last = std::min(out_last, unit_end - 1 - image * g.out_rows);
    for (int64_t out_row = out_first; out_row <= out_last; ++out_row) {
      const int64_t kh = shifted - out_row * g.stride_rows;
      const int64_t unit = image * g.out_rows + out_row;
      const T* src_unit =
          col + (unit - unit_begin) * g.out_cols * patch + kh * g.window_cols * depth;
      for (int64_t out_col = 0; out_col < g.out_cols; ++out_col) {
        const T* src = src_unit + out_col * patch;
        const int64_t in_col0 = out_col * g.stride_cols - g.pad_left;
        const int64_t kw_begin = std::max<int64_t>(0, -in_col0);
        const int64_t kw_end = std::min<int64_t>(g.window_cols, g.in_cols - in_col0);
        if (kw_begin >= kw_end) continue;
        T* dst = dst_row + (in_col0 + kw_begin) * depth;
        const T* s = src + kw_begin * depth;
        const int64_t n = (kw_end - kw_begin) * depth;
        for (int64_t i = 0; i < n; ++i) dst[i] += s[i];
      }
    }
  }
}

}  // namespace weft::kernels
