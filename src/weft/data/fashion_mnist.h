// Fashion-MNIST: 60,000 training and 10,000 test grey-scale 28x28 images of clothing in 10 classes,
// as shipped by the Debian package `dataset-fashion-mnist` (IDX files, gzip'd). Loading is
// stateless and thread-safe.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "weft/core/statusor.h"
#include "weft/data/idx.h"

namespace weft::data {

inline constexpr char kDefaultFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";
inline constexpr int kFashionMnistClasses = 10;
// Class names, indexed by label.
inline constexpr std::array<std::string_view, kFashionMnistClasses> kFashionMnistClassNames = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

struct FashionMnist {
  IdxExamples train;  // 60,000 examples of 28x28 = 784 floats in [0, 1]
  IdxExamples test;   // 10,000 examples
};

// Loads train-{images-idx3,labels-idx1}-ubyte and t10k-{images-idx3,labels-idx1}-ubyte from `dir`,
// each either plain or with a .gz suffix (the .gz name is tried first; the content decides how it
// is read). A missing directory is NotFound naming it and the Debian package that provides it; a
// missing file is NotFound naming the file; a bad file fails as ReadIdxExamples says. Labels must
// lie in [0, 10) and train and test images have one size.
StatusOr<FashionMnist> LoadFashionMnist(const std::string& dir = kDefaultFashionMnistDir);

}  // namespace weft::data
