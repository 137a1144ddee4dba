// LoadFashionMnist: finds the four IDX files, reads them in parallel and builds the two Datasets.
#include "weft/train/data/fashion_mnist.h"

#include <filesystem>
#include <future>
#include <system_error>

#include "weft/core/str_util.h"
#include "weft/train/data/idx_reader.h"

namespace weft::train {
namespace {

// The path of `dir`/`base`.gz if it exists, else of `dir`/`base` if it exists, else NotFound.
StatusOr<std::string> FindIdxFile(const std::filesystem::path& dir, const std::string& base) {
  std::error_code error;
  for (const std::string& name : {base + ".gz", base}) {
    std::filesystem::path path = dir / name;
    if (std::filesystem::is_regular_file(path, error)) return path.string();
  }
  return NotFound("Fashion-MNIST file '", (dir / base).string(), "' (or '", base,
                  ".gz') is missing from '", dir.string(), "'");
}

StatusOr<Dataset> LoadSplit(const std::filesystem::path& dir, const std::string& prefix) {
  WEFT_ASSIGN_OR_RETURN(std::string images_path, FindIdxFile(dir, prefix + "-images-idx3-ubyte"));
  WEFT_ASSIGN_OR_RETURN(std::string labels_path, FindIdxFile(dir, prefix + "-labels-idx1-ubyte"));
  WEFT_ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile(images_path));
  WEFT_ASSIGN_OR_RETURN(IdxArray labels, ReadIdxFile(labels_path));
  StatusOr<Dataset> dataset = MakeDataset(images, labels, kFashionMnistClasses);
  if (!dataset.ok()) {
    return dataset.status().WithContext(
        StrCat("Fashion-MNIST '", images_path, "' and '", labels_path, "'"));
  }
  return dataset;
}

}  // namespace

StatusOr<FashionMnist> LoadFashionMnist(const std::string& dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return NotFound("Fashion-MNIST directory '", dir,
                    "' does not exist; the Debian package `dataset-fashion-mnist` provides it "
                    "(install it with tools/setup.sh)");
  }
  // Inflating is most of the time and is sequential within a file: load the training split on a
  // second thread while this one loads the (six times smaller) test split.
  std::future<StatusOr<Dataset>> train_future;
  try {
    train_future = std::async(std::launch::async, [dir] { return LoadSplit(dir, "train"); });
  } catch (const std::system_error&) {  // no thread to be had: load both here
    train_future = std::async(std::launch::deferred, [dir] { return LoadSplit(dir, "train"); });
  }
  StatusOr<Dataset> test = LoadSplit(dir, "t10k");
  StatusOr<Dataset> train = train_future.get();
  WEFT_RETURN_IF_ERROR(train.status());
  WEFT_RETURN_IF_ERROR(test.status());
  if (train->height != test->height || train->width != test->width) {
    return InvalidArgument("Fashion-MNIST in '", dir, "': train images are ", train->height, "x",
                           train->width, " but test images are ", test->height, "x", test->width);
  }
  return FashionMnist{std::move(train).value(), std::move(test).value()};
}

}  // namespace weft::train
