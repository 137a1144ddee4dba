// W7's data: synthetic examples shaped like Criteo's click logs, generated deterministically from a
// seed so every process (and every run) sees the same example at the same index. Each example has
// 13 dense features (log(1 + count), counts heavy-tailed), 26 categorical ids drawn from a
// Zipf(1.05) distribution over each table's rows (scattered over the table, so hot rows are not
// all at its start), and a 0/1 label drawn from a fixed hidden logistic model of those features,
// so a model has something to learn. Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/data/dataset.h"

namespace weft::data {

struct SyntheticCriteoOptions {
  uint64_t seed = 1;
  int num_dense = 13;
  // Rows of each categorical feature's table (one id per table per example). W7: 4 tables of
  // 2,000,000 rows, 8 of 100,000 and 14 of 10,000.
  std::vector<int64_t> table_rows = W7TableRows();
  double zipf_exponent = 1.05;
  // The hidden model: logit = bias + dense . w + sum over tables of a weight per id, each id's
  // weight uniform in [-id_weight_scale, id_weight_scale]; the dense weights are normal with
  // standard deviation dense_weight_scale. The bias sets the share of positive labels.
  double bias = -1.6;
  double id_weight_scale = 0.7;
  double dense_weight_scale = 0.3;

  static std::vector<int64_t> W7TableRows();
};

// InvalidArgument naming the field when `options` cannot generate examples.
Status ValidateSyntheticCriteoOptions(const SyntheticCriteoOptions& options);

// Examples `first`, ..., `first + count - 1` as one batch: dense float32 [count, num_dense], ids
// int64 [count, tables] (column t in [0, table_rows[t])), label float32 [count, 1].
StatusOr<Element> GenerateSyntheticCriteo(const SyntheticCriteoOptions& options, int64_t first,
                                          int64_t count);

// The dataset of examples [first, first + count) in batches of `batch_size` (the last one smaller
// unless `drop_remainder`), each element (dense, ids, label) as above, generated when the element
// is asked for. Bad options or a bad range come back as the error of the first GetNext.
Dataset SyntheticCriteoDataset(const SyntheticCriteoOptions& options, int64_t first, int64_t count,
                               int64_t batch_size, bool drop_remainder = false);

}  // namespace weft::data
