#include "weft/data/idx.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include "weft/data/data_test_util.h"
#include "weft/data/dataset.h"

namespace weft::data {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<uint8_t> IdxBytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> bytes = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back((d >> shift) & 0xff);
  }
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

std::string TempPath(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return (std::filesystem::path(::testing::TempDir()) /
          (std::string("weft_idx_") + info->name() + suffix))
      .string();
}

std::string WritePlain(const std::string& suffix, const std::vector<uint8_t>& bytes) {
  const std::string path = TempPath(suffix);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::string WriteGzip(const std::string& suffix, const std::vector<uint8_t>& bytes) {
  const std::string path = TempPath(suffix);
  gzFile file = gzopen(path.c_str(), "wb");
  EXPECT_NE(file, nullptr);
  EXPECT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(file);
  return path;
}

// Three 2x2 images with pixel values 0, 51, 102, 255 in various places, and labels 7, 0, 3.
const std::vector<uint8_t> kImages =
    IdxBytes({3, 2, 2}, {0, 51, 102, 255, 255, 0, 0, 0, 1, 2, 3, 4});
const std::vector<uint8_t> kLabels = IdxBytes({3}, {7, 0, 3});

void ExpectThreeImages(const Dataset& dataset) {
  StatusOr<std::vector<Element>> elements = Collect(dataset);
  ASSERT_TRUE(elements.ok()) << elements.status();
  ASSERT_EQ(elements->size(), 3u);
  const Tensor& image = (*elements)[0][0];
  EXPECT_EQ(image.dtype(), DataType::kFloat);
  EXPECT_EQ(image.shape(), TensorShape({4}));
  EXPECT_THAT(image.flat<float>(), ElementsAre(0.0f, 0.2f, 0.4f, 1.0f));
  EXPECT_EQ((*elements)[0][1].dtype(), DataType::kInt64);
  EXPECT_THAT(Scalars<int64_t>(*elements, 1), ElementsAre(7, 0, 3));
}

TEST(IdxTest, PlainFiles) {
  ExpectThreeImages(
      Dataset::FromIdxFiles(WritePlain("-images", kImages), WritePlain("-labels", kLabels)));
}

TEST(IdxTest, GzipFiles) {
  ExpectThreeImages(
      Dataset::FromIdxFiles(WriteGzip("-images.gz", kImages), WriteGzip("-labels.gz", kLabels)));
}

TEST(IdxTest, ReadIdxFileKeepsDims) {
  StatusOr<Tensor> tensor = ReadIdxFile(WriteGzip(".gz", kImages));
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(tensor->dtype(), DataType::kUInt8);
  EXPECT_EQ(tensor->shape(), TensorShape({3, 2, 2}));
}

TEST(IdxTest, Errors) {
  const std::string missing = TempPath("-missing");
  EXPECT_TRUE(IsNotFound(ReadIdxFile(missing).status()));
  EXPECT_THAT(ReadIdxFile(missing).status().message(), HasSubstr(missing));

  std::vector<uint8_t> truncated = kImages;
  truncated.resize(truncated.size() - 2);
  EXPECT_TRUE(IsDataLoss(ReadIdxFile(WritePlain("-truncated", truncated)).status()));
  EXPECT_TRUE(IsDataLoss(ReadIdxFile(WriteGzip("-truncated.gz", truncated)).status()));

  std::vector<uint8_t> trailing = kLabels;
  trailing.push_back(9);
  EXPECT_TRUE(IsInvalidArgument(ReadIdxFile(WritePlain("-trailing", trailing)).status()));
  EXPECT_TRUE(IsInvalidArgument(ReadIdxFile(WritePlain("-magic", {1, 2, 3, 4, 5})).status()));

  const std::string images = WritePlain("-images", kImages);
  const std::string two_labels = WritePlain("-two-labels", IdxBytes({2}, {1, 2}));
  Status mismatch = Dataset::FromIdxFiles(images, two_labels).status();
  EXPECT_TRUE(IsInvalidArgument(mismatch));
  EXPECT_THAT(mismatch.message(), HasSubstr("3 images"));
  EXPECT_THAT(mismatch.message(), HasSubstr("2 labels"));
}

}  // namespace
}  // namespace weft::data
