#include "weft/data/idx.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/allocator.h"
#include "weft/core/str_util.h"
#include "weft/data/dataset.h"
#include "weft/data/testing/data_test_util.h"
#include "weft/data/testing/idx_test_util.h"
#include "weft/io/testing/io_test_util.h"

namespace weft::data {
namespace {

using testing::Bytes;
using testing::Collect;
using testing::Gzip;
using testing::IdxBytes;
using testing::RandomBytes;
using testing::Scalars;
using testing::WriteBytes;

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TempPath(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return (std::filesystem::path(::testing::TempDir()) /
          (std::string("weft_idx_") + info->name() + suffix))
      .string();
}

std::string WritePlain(const std::string& suffix, const std::vector<uint8_t>& bytes) {
  const std::string path = TempPath(suffix);
  WriteBytes(path, bytes);
  return path;
}

std::string WriteGzip(const std::string& suffix, const std::vector<uint8_t>& bytes) {
  return WritePlain(suffix, Gzip(bytes));
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

// The reader's robustness on bad input: every error is a Status naming the file, never a crash.
Bytes SmallPayload() {
  Bytes data(24);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 10);
  return data;
}

TEST(IdxRobustnessTest, BadHeadersAndAbsurdDimsAreRefused) {
  io::testing::TempDir dir;
  struct Case {
    Bytes bytes;
    Code code;
  };
  const std::vector<Case> cases = {
      {{}, Code::kDataLoss},
      {{'h', 'e', 'l', 'l', 'o'}, Code::kInvalidArgument},
      {IdxBytes({1}, {0, 0, 0, 0}, 0x0D), Code::kUnimplemented},  // float32
      {IdxBytes({}, {7}), Code::kInvalidArgument},                // rank 0
      {IdxBytes(std::vector<uint32_t>(9, 1), {7}), Code::kInvalidArgument},
      {IdxBytes({0xffffffff, 0xffffffff, 0xffffffff}, {}), Code::kInvalidArgument},
      {IdxBytes({65536, 65536}, {}), Code::kInvalidArgument},  // 4 GiB
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir.File(StrCat("bad", i));
    WriteBytes(path, cases[i].bytes);
    StatusOr<Tensor> tensor = ReadIdxFile(path);
    ASSERT_FALSE(tensor.ok()) << "case " << i;
    EXPECT_EQ(tensor.status().code(), cases[i].code) << "case " << i << ": " << tensor.status();
    EXPECT_THAT(tensor.status().message(), HasSubstr(path));
  }
}

// Found by fuzz/idx_reader_fuzzer: a 12-byte file whose dims claim 1 GiB had the reader allocate
// 1 GiB before it found the data missing (about a second per read under AddressSanitizer).
TEST(IdxRobustnessTest, DimsBeyondWhatTheFileCanHoldAreRefusedBeforeAllocating) {
  io::testing::TempDir dir;
  const Bytes plain = IdxBytes({1u << 30}, {1, 2, 3});
  const Bytes gzipped = Gzip(plain);
  ResetPeakBytesInUse();
  const int64_t before = GetAllocatorStats().bytes_in_use;
  for (const Bytes* bytes : {&plain, &gzipped}) {
    const std::string path = dir.File(bytes == &plain ? "huge" : "huge.gz");
    WriteBytes(path, *bytes);
    Status status = ReadIdxFile(path).status();
    EXPECT_TRUE(IsDataLoss(status)) << status;
    EXPECT_THAT(status.message(), HasSubstr(path));
    EXPECT_THAT(status.message(), HasSubstr("1073741824 data bytes"));
  }
  EXPECT_LT(GetAllocatorStats().peak_bytes_in_use, before + (int64_t{1} << 20));
}

TEST(IdxRobustnessTest, EveryTruncationFailsNamingTheFile) {
  io::testing::TempDir dir;
  const Bytes plain = IdxBytes({2, 3, 4}, SmallPayload());
  const Bytes gzipped = Gzip(plain);
  for (const Bytes* full : {&plain, &gzipped}) {
    for (size_t length = 0; length < full->size(); ++length) {
      const std::string path = dir.File(StrCat("cut", full == &plain ? "" : "gz", length));
      WriteBytes(path, Bytes(full->begin(), full->begin() + length));
      StatusOr<Tensor> tensor = ReadIdxFile(path);
      ASSERT_FALSE(tensor.ok()) << "length " << length << " of " << full->size()
                                << (full == &plain ? " plain" : " gzip'd");
      EXPECT_THAT(tensor.status().message(), HasSubstr(path));
    }
  }
  Bytes corrupt = gzipped;
  corrupt[corrupt.size() - 5] ^= 0xff;  // the CRC-32
  WriteBytes(dir.File("crc.gz"), corrupt);
  EXPECT_TRUE(IsDataLoss(ReadIdxFile(dir.File("crc.gz")).status()));
}

TEST(IdxRobustnessTest, RandomBytesNeverCrash) {
  io::testing::TempDir dir;
  const Bytes valid = IdxBytes({2, 3, 4}, SmallPayload());
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const std::string path = dir.File(StrCat("garbage", seed));
    Bytes bytes = RandomBytes(seed, seed % 97);
    // Some inputs get past the first checks: a valid IDX or gzip prefix, a random tail; some are
    // random bytes inside a valid gzip wrapper.
    if (seed % 4 == 1 && bytes.size() >= 4) std::copy_n(valid.begin(), 4, bytes.begin());
    if (seed % 4 == 2 && bytes.size() >= 2) bytes[0] = 0x1f, bytes[1] = 0x8b;
    if (seed % 4 == 3) bytes = Gzip(bytes);
    WriteBytes(path, bytes);
    StatusOr<Tensor> tensor = ReadIdxFile(path);
    if (!tensor.ok()) {
      EXPECT_THAT(tensor.status().message(), HasSubstr(path));
    }
  }
}

}  // namespace
}  // namespace weft::data
