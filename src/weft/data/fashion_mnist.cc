// LoadFashionMnist: finds the four IDX files, reads the two splits in parallel and checks them.
#include "weft/data/fashion_mnist.h"

#include <filesystem>
#include <future>
#include <system_error>

#include "weft/core/str_util.h"

namespace weft::data {
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

// One split: its examples, with every label checked to be a class.
StatusOr<IdxExamples> LoadSplit(const std::filesystem::path& dir, const std::string& prefix) {
  WEFT_ASSIGN_OR_RETURN(std::string images_path, FindIdxFile(dir, prefix + "-images-idx3-ubyte"));
  WEFT_ASSIGN_OR_RETURN(std::string labels_path, FindIdxFile(dir, prefix + "-labels-idx1-ubyte"));
  WEFT_ASSIGN_OR_RETURN(IdxExamples examples, ReadIdxExamples(images_path, labels_path));
  const int64_t* labels = examples.labels.data<int64_t>();
  for (int64_t i = 0; i < examples.size(); ++i) {
    if (labels[i] >= kFashionMnistClasses) {
      return InvalidArgument("Fashion-MNIST '", labels_path, "': label ", labels[i], " of example ",
                             i, " is not a class in [0, ", kFashionMnistClasses, ")");
    }
  }
  return examples;
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
  std::future<StatusOr<IdxExamples>> train_future;
  try {
    train_future = std::async(std::launch::async, [dir] { return LoadSplit(dir, "train"); });
  } catch (const std::system_error&) {  // no thread to be had: load both here
    train_future = std::async(std::launch::deferred, [dir] { return LoadSplit(dir, "train"); });
  }
  StatusOr<IdxExamples> test = LoadSplit(dir, "t10k");
  StatusOr<IdxExamples> train = train_future.get();
  WEFT_RETURN_IF_ERROR(train.status());
  WEFT_RETURN_IF_ERROR(test.status());
  if (train->images.dim_size(1) != test->images.dim_size(1)) {
    return InvalidArgument("Fashion-MNIST in '", dir, "': train images have ",
                           train->images.dim_size(1), " pixels but test images ",
                           test->images.dim_size(1));
  }
  return FashionMnist{std::move(train).value(), std::move(test).value()};
}

}  // namespace weft::data
