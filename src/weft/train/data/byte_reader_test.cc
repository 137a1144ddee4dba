#include "weft/train/data/byte_reader.h"

#include <algorithm>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/str_util.h"
#include "weft/train/data/data_test_util.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;

// Reads the whole stream in chunks of `chunk` bytes.
StatusOr<Bytes> ReadAll(const std::string& path, size_t chunk) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<ByteReader> reader, OpenByteReader(path));
  Bytes out;
  Bytes buffer(chunk);
  for (;;) {
    WEFT_ASSIGN_OR_RETURN(size_t got, reader->Read(buffer.data(), chunk));
    out.insert(out.end(), buffer.begin(), buffer.begin() + got);
    if (got < chunk) return out;
  }
}

// Half random, half repetitive: large enough to span several of the reader's input chunks.
Bytes MixedPayload(size_t size) {
  Bytes out = RandomBytes(7, size);
  for (size_t i = 0; i < size; i += 2) out[i] = static_cast<uint8_t>(i / 1000);
  return out;
}

TEST(ByteReaderTest, ReadsPlainFilesInAnyChunkSize) {
  TempDir dir;
  Bytes payload = MixedPayload(100000);
  WriteBytes(dir.File("plain"), payload);
  for (size_t chunk : {1, 2, 3, 4096, 100000, 1 << 20}) {
    StatusOr<Bytes> read = ReadAll(dir.File("plain"), chunk);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(*read, payload) << "chunk " << chunk;
  }
  StatusOr<std::unique_ptr<ByteReader>> reader = OpenByteReader(dir.File("plain"));
  ASSERT_TRUE(reader.ok());
  EXPECT_FALSE((*reader)->compressed());
  EXPECT_EQ((*reader)->path(), dir.File("plain"));
}

TEST(ByteReaderTest, InflatesGzipFilesWhateverTheirName) {
  TempDir dir;
  Bytes payload = MixedPayload(3 << 20);  // inflates across many input chunks
  WriteBytes(dir.File("data.bin"), Gzip(payload));
  for (size_t chunk : {size_t{7777}, size_t{1} << 22}) {
    StatusOr<Bytes> read = ReadAll(dir.File("data.bin"), chunk);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(*read, payload);
  }
  StatusOr<std::unique_ptr<ByteReader>> reader = OpenByteReader(dir.File("data.bin"));
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE((*reader)->compressed());
}

TEST(ByteReaderTest, ReadsConcatenatedGzipMembersAsOneStream) {
  TempDir dir;
  Bytes first = RandomBytes(1, 500), second = RandomBytes(2, 700);
  Bytes file = Gzip(first);
  Bytes more = Gzip(second);
  file.insert(file.end(), more.begin(), more.end());
  WriteBytes(dir.File("two.gz"), file);
  StatusOr<Bytes> read = ReadAll(dir.File("two.gz"), 64);
  ASSERT_TRUE(read.ok()) << read.status();
  first.insert(first.end(), second.begin(), second.end());
  EXPECT_EQ(*read, first);
}

TEST(ByteReaderTest, EmptyAndTinyFilesReadAsPlain) {
  TempDir dir;
  for (const Bytes& content : {Bytes{}, Bytes{0x1f}, Bytes{0x1f, 0x8c}}) {
    WriteBytes(dir.File("tiny"), content);
    StatusOr<Bytes> read = ReadAll(dir.File("tiny"), 16);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(*read, content);
  }
}

TEST(ByteReaderTest, ReadingPastTheEndReturnsZero) {
  TempDir dir;
  WriteBytes(dir.File("a.gz"), Gzip({1, 2, 3}));
  WriteBytes(dir.File("a"), {1, 2, 3});
  for (const char* name : {"a.gz", "a"}) {
    StatusOr<std::unique_ptr<ByteReader>> reader = OpenByteReader(dir.File(name));
    ASSERT_TRUE(reader.ok());
    uint8_t buffer[8];
    StatusOr<size_t> got = (*reader)->Read(buffer, sizeof(buffer));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, 3u);
    for (int i = 0; i < 3; ++i) {
      got = (*reader)->Read(buffer, sizeof(buffer));
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, 0u);
    }
  }
}

TEST(ByteReaderTest, MissingFileIsNotFoundAndDirectoryIsRejected) {
  TempDir dir;
  StatusOr<std::unique_ptr<ByteReader>> missing = OpenByteReader(dir.File("nope.gz"));
  EXPECT_TRUE(IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr(dir.File("nope.gz")));
  StatusOr<std::unique_ptr<ByteReader>> directory = OpenByteReader(dir.path());
  EXPECT_TRUE(IsInvalidArgument(directory.status())) << directory.status();
  EXPECT_THAT(directory.status().message(), HasSubstr("directory"));
}

TEST(ByteReaderTest, EveryTruncationOfAGzipFileIsDataLoss) {
  TempDir dir;
  Bytes payload = RandomBytes(3, 200);
  Bytes gz = Gzip(payload);
  // Lengths 0 and 1 lack the gzip magic and read as plain files; every longer cut is detected.
  for (size_t length = 2; length < gz.size(); ++length) {
    std::string path = dir.File(StrCat("cut", length, ".gz"));
    WriteBytes(path, Bytes(gz.begin(), gz.begin() + length));
    StatusOr<Bytes> read = ReadAll(path, 64);
    ASSERT_FALSE(read.ok()) << "length " << length;
    EXPECT_TRUE(IsDataLoss(read.status())) << read.status();
    EXPECT_THAT(read.status().message(), HasSubstr(path));
  }
}

TEST(ByteReaderTest, CorruptChecksumIsDataLoss) {
  TempDir dir;
  Bytes gz = Gzip(RandomBytes(4, 300));
  gz[gz.size() - 6] ^= 0x40;  // inside the CRC-32 of the trailer
  WriteBytes(dir.File("bad.gz"), gz);
  StatusOr<Bytes> read = ReadAll(dir.File("bad.gz"), 1000);
  EXPECT_TRUE(IsDataLoss(read.status())) << read.status();
  EXPECT_THAT(read.status().message(), HasSubstr("corrupt gzip stream"));
  EXPECT_THAT(read.status().message(), HasSubstr(dir.File("bad.gz")));
}

TEST(ByteReaderTest, ErrorsAreSticky) {
  TempDir dir;
  Bytes gz = Gzip(RandomBytes(5, 300));
  gz.resize(gz.size() / 2);
  WriteBytes(dir.File("cut.gz"), gz);
  StatusOr<std::unique_ptr<ByteReader>> reader = OpenByteReader(dir.File("cut.gz"));
  ASSERT_TRUE(reader.ok());
  uint8_t buffer[1000];
  EXPECT_FALSE((*reader)->Read(buffer, sizeof(buffer)).ok());
  EXPECT_FALSE((*reader)->Read(buffer, sizeof(buffer)).ok());
}

TEST(ByteReaderTest, TrailingBytesAfterTheGzipStreamAreDataLoss) {
  TempDir dir;
  Bytes gz = Gzip(RandomBytes(6, 100));
  gz.push_back(0);
  gz.push_back(0);
  WriteBytes(dir.File("trail.gz"), gz);
  StatusOr<Bytes> read = ReadAll(dir.File("trail.gz"), 1000);
  EXPECT_TRUE(IsDataLoss(read.status())) << read.status();
  EXPECT_THAT(read.status().message(), HasSubstr("trailing bytes"));
}

TEST(ByteReaderTest, FlippedBytesNeverCrash) {
  TempDir dir;
  Bytes payload = RandomBytes(8, 150);
  Bytes gz = Gzip(payload);
  for (size_t i = 0; i < gz.size(); ++i) {
    Bytes bad = gz;
    bad[i] ^= 0xa5;
    std::string path = dir.File(StrCat("flip", i, ".gz"));
    WriteBytes(path, bad);
    StatusOr<Bytes> read = ReadAll(path, 37);
    // Header fields such as the timestamp are not checksummed; any accepted stream must still
    // inflate to the original bytes (the CRC-32 covers the data).
    if (read.ok() && i >= 2) {
      EXPECT_EQ(*read, payload) << "flipped byte " << i;
    }
  }
}

}  // namespace
}  // namespace weft::train
