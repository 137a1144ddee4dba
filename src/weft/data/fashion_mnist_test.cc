#include "weft/data/fashion_mnist.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/data/testing/idx_test_util.h"
#include "weft/io/testing/io_test_util.h"

namespace weft::data {
namespace {

using testing::Bytes;
using testing::Gzip;
using testing::IdxBytes;
using testing::RandomBytes;
using testing::WriteBytes;

using io::testing::TempDir;
using ::testing::HasSubstr;

// Writes a tiny Fashion-MNIST lookalike: `train` and `test` examples of 28x28, labels i % 10.
// Train files are gzip'd, test files plain, as both forms must load.
void WriteFakeFashionMnist(const TempDir& dir, uint32_t train, uint32_t test) {
  auto images = [](uint32_t n) { return IdxBytes({n, 28, 28}, RandomBytes(n, n * 784)); };
  auto labels = [](uint32_t n) {
    Bytes data(n);
    for (uint32_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i % 10);
    return IdxBytes({n}, data);
  };
  WriteBytes(dir.File("train-images-idx3-ubyte.gz"), Gzip(images(train)));
  WriteBytes(dir.File("train-labels-idx1-ubyte.gz"), Gzip(labels(train)));
  WriteBytes(dir.File("t10k-images-idx3-ubyte"), images(test));
  WriteBytes(dir.File("t10k-labels-idx1-ubyte"), labels(test));
}

TEST(FashionMnistTest, MissingDirectoryNamesItAndThePackage) {
  TempDir dir;
  std::string missing = dir.File("no-such-dir");
  StatusOr<FashionMnist> data = LoadFashionMnist(missing);
  EXPECT_TRUE(IsNotFound(data.status())) << data.status();
  EXPECT_THAT(data.status().message(), HasSubstr(missing));
  EXPECT_THAT(data.status().message(), HasSubstr("dataset-fashion-mnist"));
  EXPECT_THAT(data.status().message(), HasSubstr("tools/setup.sh"));
}

TEST(FashionMnistTest, LoadsPlainAndGzipFiles) {
  TempDir dir;
  WriteFakeFashionMnist(dir, 30, 12);
  StatusOr<FashionMnist> data = LoadFashionMnist(dir.path());
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train.size(), 30);
  EXPECT_EQ(data->test.size(), 12);
  EXPECT_EQ(data->train.images.shape(), TensorShape({30, 784}));
  EXPECT_EQ(data->test.images.shape(), TensorShape({12, 784}));
  EXPECT_EQ(data->test.labels.data<int64_t>()[11], 1);
}

TEST(FashionMnistTest, MissingFileIsNamed) {
  TempDir dir;
  WriteFakeFashionMnist(dir, 10, 10);
  std::filesystem::remove(dir.File("t10k-labels-idx1-ubyte"));
  StatusOr<FashionMnist> data = LoadFashionMnist(dir.path());
  EXPECT_TRUE(IsNotFound(data.status())) << data.status();
  EXPECT_THAT(data.status().message(), HasSubstr("t10k-labels-idx1-ubyte"));
}

TEST(FashionMnistTest, RejectsOutOfRangeLabelsAndMismatchedCounts) {
  TempDir dir;
  WriteFakeFashionMnist(dir, 10, 10);
  WriteBytes(dir.File("t10k-labels-idx1-ubyte"), IdxBytes({10}, Bytes(10, 10)));
  StatusOr<FashionMnist> data = LoadFashionMnist(dir.path());
  EXPECT_TRUE(IsInvalidArgument(data.status())) << data.status();
  EXPECT_THAT(data.status().message(), HasSubstr("label 10 of example 0"));
  EXPECT_THAT(data.status().message(), HasSubstr("t10k-labels-idx1-ubyte"));

  WriteBytes(dir.File("t10k-labels-idx1-ubyte"), IdxBytes({9}, Bytes(9, 0)));
  data = LoadFashionMnist(dir.path());
  EXPECT_TRUE(IsInvalidArgument(data.status())) << data.status();
  EXPECT_THAT(data.status().message(), HasSubstr("10 images"));
  EXPECT_THAT(data.status().message(), HasSubstr("9 labels"));
}

TEST(FashionMnistTest, CorruptFileFailsWithItsPath) {
  TempDir dir;
  WriteFakeFashionMnist(dir, 10, 10);
  Bytes gz = Gzip(IdxBytes({10, 28, 28}, RandomBytes(1, 7840)));
  gz.erase(gz.end() - 20, gz.end());  // cut off inside the deflate data
  WriteBytes(dir.File("train-images-idx3-ubyte.gz"), gz);
  StatusOr<FashionMnist> data = LoadFashionMnist(dir.path());
  EXPECT_TRUE(IsDataLoss(data.status())) << data.status();
  EXPECT_THAT(data.status().message(), HasSubstr("train-images-idx3-ubyte.gz"));
}

TEST(FashionMnistTest, LoadsTheRealDataWhenInstalled) {
  if (!std::filesystem::is_directory(kDefaultFashionMnistDir)) {
    GTEST_SKIP() << kDefaultFashionMnistDir << " is missing (Debian package dataset-fashion-mnist)";
  }
  auto start = std::chrono::steady_clock::now();
  StatusOr<FashionMnist> data = LoadFashionMnist();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(data.ok()) << data.status();
  std::cout << "LoadFashionMnist took " << seconds * 1000 << " ms\n";
  RecordProperty("load_ms", static_cast<int>(seconds * 1000));

  EXPECT_EQ(data->train.size(), 60000);
  EXPECT_EQ(data->test.size(), 10000);
  for (const IdxExamples* split : {&data->train, &data->test}) {
    EXPECT_EQ(split->images.dim_size(1), 784);
    std::span<const float> pixels = split->images.flat<float>();
    auto [low, high] = std::minmax_element(pixels.begin(), pixels.end());
    EXPECT_EQ(*low, 0.0f);
    EXPECT_EQ(*high, 1.0f);
    std::vector<int64_t> per_class(kFashionMnistClasses, 0);
    for (int64_t label : split->labels.flat<int64_t>()) {
      ASSERT_GE(label, 0);
      ASSERT_LT(label, kFashionMnistClasses);
      ++per_class[label];
    }
    // Fashion-MNIST is balanced: 6,000 / 1,000 examples per class.
    for (int64_t count : per_class) EXPECT_EQ(count, split->size() / 10);
  }
}

}  // namespace
}  // namespace weft::data
