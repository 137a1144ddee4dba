// Dataset: an immutable, cheap-to-copy description of an input pipeline after tf.data (sources
// FromTensors, FromIdxFiles, FromCsvFile; transformations Shuffle, Batch, Repeat, Map, Prefetch,
// Shard, Take). For a given seed a pipeline yields the same sequence of elements every time.
// Datasets may be shared between threads; an Iterator serves one consumer and is not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/statusor.h"
#include "weft/core/tensor.h"
#include "weft/data/csv.h"

namespace weft::proto {
class DatasetDef;
}  // namespace weft::proto

namespace weft::data {

// One element of a dataset: its components, in a fixed order (e.g. image, label).
using Element = std::vector<Tensor>;

class Iterator {
 public:
  virtual ~Iterator() = default;
  // Produces the next element, or sets *end_of_sequence (and then keeps setting it). An error
  // concerns one element: calling again continues with the next one where the source can (a CSV
  // row, a Map call); a pipeline that cannot go on reports end of sequence or the error again.
  virtual Status GetNext(Element* element, bool* end_of_sequence) = 0;
};

class DatasetNode;
struct IdxExamples;

class Dataset {
 public:
  using MapFn = std::function<StatusOr<Element>(Element)>;

  // Slices every component along dimension 0, like tf.data's from_tensor_slices: element i holds
  // row i of each component. The elements share the components' buffers, so treat them as
  // read-only. Components must be non-empty tensors of rank >= 1 with the same dimension 0.
  static Dataset FromTensors(std::vector<Tensor> components);
  // Reads an IDX image file ([N, rows, cols] or [N, d]) and an IDX label file ([N]), plain or
  // gzip'd, now; elements are (float32 [rows*cols] scaled by 1/255, int64 scalar label).
  static Dataset FromIdxFiles(const std::string& images_path, const std::string& labels_path);
  // The same from examples already read (ReadIdxExamples, LoadFashionMnist): described by their
  // files' paths, so another process rebuilding it reads the files itself.
  static Dataset FromIdxExamples(const IdxExamples& examples);
  // Reads `path` lazily, one row per element, one scalar per column (see csv.h). MakeIterator
  // fails with NotFound for a missing file; a bad row fails that GetNext with InvalidArgument.
  static Dataset FromCsvFile(std::string path, CsvOptions options);

  // A reservoir of `buffer_size` elements; each output is drawn from it uniformly by a
  // std::mt19937_64 seeded from `seed` and the Repeat epoch (so each epoch is reshuffled, and the
  // same seed always gives the same sequences). Every input element comes out exactly once.
  Dataset Shuffle(int64_t buffer_size, uint64_t seed) const;
  // Stacks `batch_size` consecutive elements along a new dimension 0; the last batch is smaller
  // unless `drop_remainder`. Each component must have one dtype and shape within a batch.
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;
  // The input `count` times (-1: forever; an input that yields nothing ends the repetition).
  Dataset Repeat(int64_t count = -1) const;
  // Applies `fn` to each element; its errors come back naming the element's position.
  Dataset Map(MapFn fn) const;
  // Runs the input on a background thread up to `buffer_size` elements ahead of the consumer;
  // yields exactly the input's sequence, errors included, in order.
  Dataset Prefetch(int64_t buffer_size) const;
  // Elements index, index + num_shards, index + 2 * num_shards, ... of the input.
  Dataset Shard(int64_t num_shards, int64_t index) const;
  // At most the first `count` elements (-1: all).
  Dataset Take(int64_t count) const;

  // Bad arguments never abort: a source or transformation given bad arguments records an
  // InvalidArgument (or the source's read error) here, every dataset built on it carries the
  // first such error, and MakeIterator returns it.
  const Status& status() const { return status_; }

  StatusOr<std::unique_ptr<Iterator>> MakeIterator() const;
  // An iterator for pass `epoch` over the dataset (pass 0 is MakeIterator()'s): every Shuffle
  // draws the order it would in that pass of a Repeat, so a training loop that starts one
  // iterator per epoch reshuffles each epoch and can recreate any epoch's order to resume in it.
  StatusOr<std::unique_ptr<Iterator>> MakeIterator(uint64_t epoch) const;

  // The pipeline as a description another process can rebuild (FromDef): every source's
  // arguments (FromTensors' tensors whole, files by path) and every transformation's. A pipeline
  // holding a Map of a C++ function has none: Unimplemented naming the Map. This dataset's error,
  // if it has one, is returned instead.
  StatusOr<proto::DatasetDef> ToDef() const;
  // The pipeline `def` describes, built through the sources and transformations above (so their
  // checks apply); a def without a kind, or with bad arguments, gives a dataset carrying an
  // InvalidArgument naming where in the def it is.
  static Dataset FromDef(const proto::DatasetDef& def);

 private:
  friend Dataset DescribedAs(const Dataset& dataset, proto::DatasetDef def);

  explicit Dataset(std::shared_ptr<const DatasetNode> node) : node_(std::move(node)) {}
  explicit Dataset(Status error) : status_(std::move(error)) {}

  std::shared_ptr<const DatasetNode> node_;
  Status status_;
};

}  // namespace weft::data
