// Dataset: a labelled image dataset held in memory as two Tensors, ready to be batched. Images are
// float32 scaled to [0,1], one flattened image per row; labels are int64 class ids. A Dataset is a
// value: copies share the tensors' buffers, which are never written after MakeDataset, so copies
// may be read from any thread.
#pragma once

#include <cstdint>

#include "weft/core/statusor.h"
#include "weft/core/tensor.h"
#include "weft/train/data/idx_reader.h"

namespace weft::train {

struct Dataset {
  Tensor images;       // float32 [N, height * width], pixel / 255
  Tensor labels;       // int64 [N]
  int64_t height = 0;  // image rows, to restore [N, height, width] for convolutions
  int64_t width = 0;   // image columns

  int64_t NumExamples() const { return labels.IsInitialized() ? labels.dim_size(0) : 0; }
  // Floats per example: height * width.
  int64_t ExampleSize() const { return height * width; }
};

// Builds a Dataset from IDX arrays: `images` must be rank 3 [N, height, width] and `labels` rank 1
// [N] with the same N. When `num_classes` > 0 every label must be below it. Errors are
// InvalidArgument and name the offending dims, counts or label (with its index).
StatusOr<Dataset> MakeDataset(const IdxArray& images, const IdxArray& labels,
                              int64_t num_classes = 0);

}  // namespace weft::train
