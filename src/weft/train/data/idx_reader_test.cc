#include "weft/train/data/idx_reader.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/str_util.h"
#include "weft/train/data/data_test_util.h"

namespace weft::train {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

// A rank-3 [2, 3, 4] array with distinct bytes.
Bytes SmallPayload() {
  Bytes data(24);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 10);
  return data;
}

TEST(IdxReaderTest, ReadsPlainAndGzipFilesBackExactly) {
  TempDir dir;
  Bytes data = SmallPayload();
  WriteBytes(dir.File("images-idx3-ubyte"), IdxBytes({2, 3, 4}, data));
  WriteBytes(dir.File("images-idx3-ubyte.gz"), Gzip(IdxBytes({2, 3, 4}, data)));
  for (const char* name : {"images-idx3-ubyte", "images-idx3-ubyte.gz"}) {
    StatusOr<IdxArray> array = ReadIdxFile(dir.File(name));
    ASSERT_TRUE(array.ok()) << array.status();
    EXPECT_EQ(array->dims, (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(array->rank(), 3);
    EXPECT_EQ(array->NumElements(), 24);
    EXPECT_EQ(array->DimsString(), "[2,3,4]");
    EXPECT_EQ(array->data, data);
  }
}

TEST(IdxReaderTest, DetectsCompressionByContentNotName) {
  TempDir dir;
  Bytes labels = {3, 1, 4, 1, 5};
  WriteBytes(dir.File("labels.gz"), IdxBytes({5}, labels));     // plain despite the name
  WriteBytes(dir.File("labels"), Gzip(IdxBytes({5}, labels)));  // gzip'd despite the name
  for (const char* name : {"labels.gz", "labels"}) {
    StatusOr<IdxArray> array = ReadIdxFile(dir.File(name));
    ASSERT_TRUE(array.ok()) << array.status();
    EXPECT_EQ(array->dims, (std::vector<int64_t>{5}));
    EXPECT_EQ(array->data, labels);
  }
}

TEST(IdxReaderTest, ReadsEmptyArraysAndLargeGzipPayloads) {
  TempDir dir;
  WriteBytes(dir.File("empty"), IdxBytes({0, 28, 28}, {}));
  StatusOr<IdxArray> empty = ReadIdxFile(dir.File("empty"));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->NumElements(), 0);
  EXPECT_TRUE(empty->data.empty());

  // Bigger than the first growth step of the payload buffer and the reader's input chunk.
  Bytes big = RandomBytes(11, 3000 * 784);
  WriteBytes(dir.File("big.gz"), Gzip(IdxBytes({3000, 28, 28}, big)));
  StatusOr<IdxArray> array = ReadIdxFile(dir.File("big.gz"));
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ(array->data, big);
}

TEST(IdxReaderTest, MissingFileIsNotFoundNamingIt) {
  TempDir dir;
  StatusOr<IdxArray> array = ReadIdxFile(dir.File("train-images-idx3-ubyte.gz"));
  EXPECT_TRUE(IsNotFound(array.status())) << array.status();
  EXPECT_THAT(array.status().message(), HasSubstr(dir.File("train-images-idx3-ubyte.gz")));
}

// Writes `bytes` to a file, reads it, and expects `code` with every substring in `parts`.
void ExpectError(const Bytes& bytes, Code code, std::initializer_list<const char*> parts) {
  TempDir dir;
  std::string path = dir.File("bad-idx");
  WriteBytes(path, bytes);
  StatusOr<IdxArray> array = ReadIdxFile(path);
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().code(), code) << array.status();
  EXPECT_THAT(array.status().message(), HasSubstr(path));
  for (const char* part : parts) EXPECT_THAT(array.status().message(), HasSubstr(part));
}

TEST(IdxReaderTest, RejectsBadMagic) {
  ExpectError({}, Code::kInvalidArgument, {"not an IDX file", "0 bytes"});
  ExpectError({'h', 'e', 'l', 'l', 'o'}, Code::kInvalidArgument, {"not an IDX file", "0x68656c6c"});
  ExpectError({0, 0, 0x42, 1, 0, 0, 0, 0}, Code::kInvalidArgument, {"unknown dtype code 0x42"});
  ExpectError(Gzip({1, 2, 3, 4, 5, 6}), Code::kInvalidArgument, {"not an IDX file"});
}

TEST(IdxReaderTest, RejectsUnsupportedDtypes) {
  ExpectError(IdxBytes({1}, {0, 0, 0, 0}, 0x0D), Code::kUnimplemented, {"float32", "0x0d"});
  ExpectError(IdxBytes({1}, {0}, 0x09), Code::kUnimplemented, {"signed byte"});
}

TEST(IdxReaderTest, RejectsBadRanks) {
  ExpectError(IdxBytes({}, {7}), Code::kInvalidArgument, {"rank 0"});
  ExpectError(IdxBytes(std::vector<uint32_t>(9, 1), {7}), Code::kInvalidArgument, {"rank 9"});
}

TEST(IdxReaderTest, RejectsAbsurdDims) {
  // 2^32-1 cubed overflows 64 bits; 65536^2 = 4 GiB is over the 1 GiB limit.
  ExpectError(IdxBytes({0xffffffff, 0xffffffff, 0xffffffff}, {}), Code::kInvalidArgument,
              {"[4294967295,4294967295,4294967295]", "exceeds"});
  ExpectError(IdxBytes({65536, 65536}, {}), Code::kInvalidArgument, {"[65536,65536]", "exceeds"});
  // Exactly at the limit is allowed by the header check; the missing data is then DataLoss, found
  // without allocating the gigabyte the header promises.
  ExpectError(IdxBytes({1u << 15, 1u << 15}, {1, 2, 3}), Code::kDataLoss,
              {"ends after 3 of the 1073741824 data bytes", "[32768,32768]"});
}

TEST(IdxReaderTest, RejectsTrailingGarbage) {
  Bytes bytes = IdxBytes({2, 3, 4}, SmallPayload());
  bytes.push_back(0xee);
  ExpectError(bytes, Code::kInvalidArgument, {"trailing garbage", "[2,3,4]"});
  ExpectError(Gzip(bytes), Code::kInvalidArgument, {"trailing garbage"});
  Bytes gz = Gzip(IdxBytes({2, 3, 4}, SmallPayload()));
  gz.push_back(0xee);
  ExpectError(gz, Code::kDataLoss, {"trailing bytes after its gzip stream"});
}

TEST(IdxReaderTest, EveryTruncationOfAPlainFileFails) {
  TempDir dir;
  Bytes full = IdxBytes({2, 3, 4}, SmallPayload());
  for (size_t length = 0; length < full.size(); ++length) {
    std::string path = dir.File(StrCat("cut", length));
    WriteBytes(path, Bytes(full.begin(), full.begin() + length));
    StatusOr<IdxArray> array = ReadIdxFile(path);
    ASSERT_FALSE(array.ok()) << "length " << length;
    // Only the empty file is "not IDX"; every other prefix is recognisably a cut-off IDX file.
    EXPECT_EQ(array.status().code(), length == 0 ? Code::kInvalidArgument : Code::kDataLoss)
        << array.status();
    EXPECT_THAT(array.status().message(), HasSubstr(path));
  }
}

TEST(IdxReaderTest, EveryTruncationOfAGzipFileFails) {
  TempDir dir;
  Bytes full = Gzip(IdxBytes({2, 3, 4}, SmallPayload()));
  for (size_t length = 0; length < full.size(); ++length) {
    std::string path = dir.File(StrCat("cut", length, ".gz"));
    WriteBytes(path, Bytes(full.begin(), full.begin() + length));
    StatusOr<IdxArray> array = ReadIdxFile(path);
    ASSERT_FALSE(array.ok()) << "length " << length;
    EXPECT_THAT(array.status().code(), AnyOf(Code::kInvalidArgument, Code::kDataLoss))
        << array.status();
    EXPECT_THAT(array.status().message(), HasSubstr(path));
  }
}

TEST(IdxReaderTest, CorruptGzipStreamIsDataLoss) {
  Bytes gz = Gzip(IdxBytes({2, 3, 4}, SmallPayload()));
  gz[gz.size() - 5] ^= 0xff;  // the CRC-32
  ExpectError(gz, Code::kDataLoss, {"corrupt gzip stream"});
  Bytes garbled = Gzip(IdxBytes({2, 3, 4}, SmallPayload()));
  for (size_t i = 10; i < garbled.size(); ++i) garbled[i] = 0xff;  // deflate data
  ExpectError(garbled, Code::kDataLoss, {"corrupt gzip stream"});
}

TEST(IdxReaderTest, RandomBytesNeverCrash) {
  TempDir dir;
  const Bytes valid = IdxBytes({2, 3, 4}, SmallPayload());
  for (uint64_t seed = 0; seed < 600; ++seed) {
    std::string path = dir.File(StrCat("garbage", seed));
    Bytes bytes = RandomBytes(seed, seed % 97);
    // Make some inputs get past the first checks: a valid IDX or gzip prefix, random tail.
    if (seed % 3 == 1 && bytes.size() >= 4) std::copy_n(valid.begin(), 4, bytes.begin());
    if (seed % 3 == 2 && bytes.size() >= 2) bytes[0] = 0x1f, bytes[1] = 0x8b;
    WriteBytes(path, bytes);
    StatusOr<IdxArray> array = ReadIdxFile(path);
    if (!array.ok()) {
      EXPECT_THAT(array.status().message(), HasSubstr(path));
    } else {
      EXPECT_EQ(static_cast<int64_t>(array->data.size()), array->NumElements());
    }
  }
  // Random bytes inside a valid gzip wrapper exercise the IDX checks behind the inflater.
  for (uint64_t seed = 0; seed < 200; ++seed) {
    std::string path = dir.File(StrCat("wrapped", seed, ".gz"));
    Bytes inner = RandomBytes(seed + 1000, seed % 50);
    if (seed % 2 == 0 && inner.size() >= 4) std::copy_n(valid.begin(), 4, inner.begin());
    WriteBytes(path, Gzip(inner));
    StatusOr<IdxArray> array = ReadIdxFile(path);
    if (!array.ok()) {
      EXPECT_THAT(array.status().message(), HasSubstr(path));
    }
  }
}

}  // namespace
}  // namespace weft::train
