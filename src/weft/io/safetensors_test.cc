#include "weft/io/safetensors.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/io/crc32c.h"
#include "weft/io/testing/io_test_util.h"

namespace weft::io {
namespace {

using testing::ReadBytes;
using testing::RunPythonReader;
using testing::TempDir;
using testing::WriteBytes;

using ::testing::HasSubstr;
using Named = std::vector<std::pair<std::string, Tensor>>;

// A tensor whose element i is `value(i)`.
template <typename T, typename Fn>
Tensor Filled(const TensorShape& shape, Fn value) {
  Tensor t(DataTypeToEnum<T>::value, shape);
  for (int64_t i = 0; i < shape.num_elements(); ++i) t.data<T>()[i] = static_cast<T>(value(i));
  return t;
}

std::string Bytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()), t.TotalBytes());
}

// Every dtype at several shapes, scalar and empty ones included.
Named AllKinds() {
  Named tensors;
  const std::vector<TensorShape> shapes = {TensorShape(),          TensorShape({0}),
                                           TensorShape({3}),       TensorShape({2, 3}),
                                           TensorShape({2, 0, 4}), TensorShape({1, 1, 1, 5})};
  for (size_t s = 0; s < shapes.size(); ++s) {
    const TensorShape& shape = shapes[s];
    const std::string suffix = "/" + std::to_string(s);
    tensors.emplace_back("f32" + suffix,
                         Filled<float>(shape, [](int64_t i) { return i * 0.5 - 1; }));
    tensors.emplace_back("f64" + suffix, Filled<double>(shape, [](int64_t i) { return i / 3.0; }));
    tensors.emplace_back("i32" + suffix, Filled<int32_t>(shape, [](int64_t i) { return -7 * i; }));
    tensors.emplace_back("i64" + suffix,
                         Filled<int64_t>(shape, [](int64_t i) { return (int64_t{1} << 40) + i; }));
    tensors.emplace_back("u8" + suffix, Filled<uint8_t>(shape, [](int64_t i) { return 250 + i; }));
    tensors.emplace_back("bool" + suffix,
                         Filled<bool>(shape, [](int64_t i) { return i % 3 != 1; }));
    tensors.emplace_back("bf16" + suffix,
                         Filled<bfloat16>(shape, [](int64_t i) { return i * 0.1 - 3; }));
  }
  return tensors;
}

// A file as another tool might write it: length, `header` as given, `data`.
std::string HandFile(const std::string& header, const std::string& data) {
  std::string file(8, '\0');
  const uint64_t length = header.size();
  std::memcpy(file.data(), &length, 8);
  return file + header + data;
}

Status OpenStatus(const std::string& path) { return SafetensorsReader::Open(path).status(); }

TEST(SafetensorsTest, RoundTripsEveryDtypeAndShape) {
  TempDir dir;
  const std::string path = dir.File("all.safetensors");
  const Named tensors = AllKinds();
  StatusOr<SafetensorsFileInfo> info = WriteSafetensorsFile(path, tensors, {{"step", "200"}});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->file_bytes, ReadBytes(path).size());
  ASSERT_EQ(info->tensors.size(), tensors.size());

  StatusOr<std::unique_ptr<SafetensorsReader>> reader = SafetensorsReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->file_bytes(), info->file_bytes);
  EXPECT_EQ((*reader)->metadata().at("step"), "200");
  ASSERT_EQ((*reader)->tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, original] = tensors[i];
    SCOPED_TRACE(name);
    const SafetensorsEntry& entry = (*reader)->tensors()[i];
    EXPECT_EQ(entry.name, name);  // file order is the order written
    EXPECT_EQ(entry.dtype, original.dtype());
    EXPECT_EQ(entry.shape, original.shape());
    EXPECT_EQ(entry.begin, info->tensors[i].begin);
    EXPECT_TRUE(entry.has_crc32c);
    EXPECT_EQ(entry.crc32c, Crc32c(original.raw_data(), original.TotalBytes()));
    EXPECT_EQ((*reader)->metadata().at("crc32c/" + name), Crc32cToHex(entry.crc32c));
    StatusOr<Tensor> read = (*reader)->Read(name);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->dtype(), original.dtype());
    EXPECT_EQ(read->shape(), original.shape());
    EXPECT_EQ(Bytes(*read), Bytes(original));
    Tensor into(original.dtype(), original.shape());
    ASSERT_TRUE((*reader)->ReadInto(entry, &into).ok());
    EXPECT_EQ(Bytes(into), Bytes(original));
  }
  StatusOr<Tensor> absent = (*reader)->Read("nope");
  EXPECT_TRUE(IsNotFound(absent.status())) << absent.status();
  EXPECT_THAT(absent.status().message(), HasSubstr(path));
  EXPECT_THAT(absent.status().message(), HasSubstr("'nope'"));
  Tensor wrong(DataType::kFloat, TensorShape({4}));
  EXPECT_TRUE(IsInvalidArgument((*reader)->ReadInto(*(*reader)->Find("f32/2"), &wrong)));
}

TEST(SafetensorsTest, HeaderLayoutByteForByte) {
  TempDir dir;
  const std::string path = dir.File("tiny.safetensors");
  const Tensor a = Tensor::FromVector<float>({1.0f, 2.0f});
  const Tensor b = Tensor::FromVector<uint8_t>({7});
  ASSERT_TRUE(WriteSafetensorsFile(path, {{"a", a}, {"b", b}}).ok());
  const std::string json = "{\"__metadata__\":{\"crc32c/a\":\"" +
                           Crc32cToHex(Crc32c(a.raw_data(), 8)) + "\",\"crc32c/b\":\"" +
                           Crc32cToHex(Crc32c(b.raw_data(), 1)) +
                           "\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                           "\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[8,9]}}";
  const std::string padded = json + std::string((8 - json.size() % 8) % 8, ' ');
  ASSERT_EQ(padded.size() % 8, 0u);
  const std::string expected = HandFile(padded, Bytes(a) + Bytes(b));
  EXPECT_EQ(ReadBytes(path), expected);
  EXPECT_EQ(static_cast<unsigned char>(expected[0]), padded.size() & 0xff);
}

TEST(SafetensorsTest, ReadsAHandWrittenFileWithoutChecksums) {
  TempDir dir;
  const std::string path = dir.File("hand.safetensors");
  // Key order differs from data order, and there is foreign metadata.
  const std::string header =
      "{\"b\": {\"dtype\": \"I32\", \"shape\": [2], \"data_offsets\": [3, 11]},"
      " \"__metadata__\": {\"format\": \"pt\"},"
      " \"a\": {\"dtype\": \"BOOL\", \"shape\": [3], \"data_offsets\": [0, 3]},"
      " \"z\": {\"dtype\": \"F64\", \"shape\": [0, 2], \"data_offsets\": [11, 11]}}";
  const int32_t ints[2] = {-5, 123456};
  std::string data("\x01\x00\x01", 3);
  data.append(reinterpret_cast<const char*>(ints), sizeof(ints));
  WriteBytes(path, HandFile(header, data));
  StatusOr<std::unique_ptr<SafetensorsReader>> reader = SafetensorsReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ((*reader)->tensors().size(), 3u);
  EXPECT_EQ((*reader)->tensors()[0].name, "a");
  EXPECT_EQ((*reader)->tensors()[1].name, "b");
  EXPECT_FALSE((*reader)->tensors()[1].has_crc32c);
  EXPECT_EQ((*reader)->metadata().at("format"), "pt");
  StatusOr<Tensor> b = (*reader)->Read("b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->flat<int32_t>()[0], -5);
  EXPECT_EQ(b->flat<int32_t>()[1], 123456);
  StatusOr<Tensor> a = (*reader)->Read("a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->flat<bool>()[0] && !a->flat<bool>()[1] && a->flat<bool>()[2]);
  StatusOr<Tensor> z = (*reader)->Read("z");
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z->shape(), TensorShape({0, 2}));
}

TEST(SafetensorsTest, TruncatedFilesAreDataLossNamingTheFile) {
  TempDir dir;
  const std::string path = dir.File("whole.safetensors");
  StatusOr<SafetensorsFileInfo> info = WriteSafetensorsFile(
      path, {{"w", Filled<float>(TensorShape({64}), [](int64_t i) { return i; })}});
  ASSERT_TRUE(info.ok()) << info.status();
  const std::string whole = ReadBytes(path);
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, whole.data(), 8);
  const size_t data_start = 8 + header_bytes;
  for (size_t cut : {size_t{0}, size_t{3}, size_t{8}, size_t{20}, data_start - 1, data_start,
                     data_start + 1, whole.size() - 1}) {
    SCOPED_TRACE(cut);
    const std::string cut_path = dir.File("cut-" + std::to_string(cut));
    WriteBytes(cut_path, whole.substr(0, cut));
    Status status = OpenStatus(cut_path);
    EXPECT_TRUE(IsDataLoss(status)) << status;
    EXPECT_THAT(status.message(), HasSubstr(cut_path));
    if (cut >= data_start) {
      EXPECT_THAT(status.message(), HasSubstr("truncated"));
    }
  }
  // Cut after Open: the short read itself is caught.
  StatusOr<std::unique_ptr<SafetensorsReader>> reader = SafetensorsReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(data_start + 100)), 0);
  StatusOr<Tensor> read = (*reader)->Read("w");
  EXPECT_TRUE(IsDataLoss(read.status())) << read.status();
  EXPECT_THAT(read.status().message(),
              HasSubstr("file " + path + " is truncated: tensor 'w' needs bytes [" +
                        std::to_string(data_start) + ", " + std::to_string(data_start + 256) +
                        ") but the file has only " + std::to_string(data_start + 100)));
}

TEST(SafetensorsTest, FlippedDataBitIsACrcMismatchNamingTheTensor) {
  TempDir dir;
  const std::string path = dir.File("flip.safetensors");
  ASSERT_TRUE(
      WriteSafetensorsFile(
          path, {{"first", Filled<double>(TensorShape({4}), [](int64_t i) { return i; })},
                 {"second", Filled<int32_t>(TensorShape({8}), [](int64_t i) { return i; })}})
          .ok());
  std::string bytes = ReadBytes(path);
  bytes[bytes.size() - 5] ^= 0x10;  // inside "second"
  WriteBytes(path, bytes);
  StatusOr<std::unique_ptr<SafetensorsReader>> reader = SafetensorsReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE((*reader)->Read("first").ok());
  StatusOr<Tensor> second = (*reader)->Read("second");
  EXPECT_TRUE(IsDataLoss(second.status())) << second.status();
  EXPECT_THAT(second.status().message(),
              HasSubstr("tensor 'second' in file " + path + ": CRC32C mismatch (stored 0x"));
}

TEST(SafetensorsTest, EveryFlippedHeaderByteIsDataLossNotACrash) {
  TempDir dir;
  const std::string path = dir.File("good.safetensors");
  ASSERT_TRUE(WriteSafetensorsFile(
                  path, {{"k", Filled<float>(TensorShape({2, 2}), [](int64_t i) { return i; })},
                         {"flag", Filled<bool>(TensorShape({3}), [](int64_t i) { return i; })}})
                  .ok());
  const std::string good = ReadBytes(path);
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, good.data(), 8);
  int case_number = 0;
  for (size_t pos = 8; pos < 8 + header_bytes; ++pos) {
    for (unsigned char mask : {0x01, 0x80}) {
      std::string bad = good;
      bad[pos] = static_cast<char>(bad[pos] ^ mask);
      const std::string bad_path = dir.File("bad-" + std::to_string(case_number++));
      WriteBytes(bad_path, bad);
      StatusOr<std::unique_ptr<SafetensorsReader>> reader = SafetensorsReader::Open(bad_path);
      Status status = reader.status();
      // A flip can leave valid JSON (a CRC digit, say); then reading must catch it.
      for (const char* name : {"k", "flag"}) {
        if (status.ok()) status = (*reader)->Read(name).status();
      }
      EXPECT_TRUE(IsDataLoss(status)) << "byte " << pos << " ^ " << int{mask} << ": " << status;
      EXPECT_THAT(status.message(), HasSubstr(bad_path));
    }
  }
}

TEST(SafetensorsTest, BadHeaderLengthsAreDataLoss) {
  TempDir dir;
  const std::string header = "{}      ";
  for (uint64_t length : {uint64_t{9}, uint64_t{200} << 20, ~uint64_t{0}}) {
    std::string file = HandFile(header, "");
    std::memcpy(file.data(), &length, 8);
    const std::string path = dir.File("len-" + std::to_string(length));
    WriteBytes(path, file);
    Status status = OpenStatus(path);
    EXPECT_TRUE(IsDataLoss(status)) << status;
    EXPECT_THAT(status.message(), HasSubstr(path));
  }
  const std::string empty = dir.File("empty-header");
  WriteBytes(empty, HandFile(header, ""));
  EXPECT_TRUE(OpenStatus(empty).ok());
}

// Each header in `headers` (with `data_bytes` bytes of data) fails Open with DataLoss whose
// message holds `expected`.
void ExpectDataLoss(const std::string& header, size_t data_bytes, const std::string& expected) {
  TempDir dir;
  const std::string path = dir.File("case.safetensors");
  WriteBytes(path, HandFile(header, std::string(data_bytes, '\0')));
  Status status = OpenStatus(path);
  EXPECT_TRUE(IsDataLoss(status)) << header << ": " << status;
  EXPECT_THAT(status.message(), HasSubstr(path)) << header;
  EXPECT_THAT(status.message(), HasSubstr(expected)) << header;
}

TEST(SafetensorsTest, OffsetsThatOverlapLeaveHolesOrRunPastTheEndAreDataLoss) {
  const std::string a = "\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}";
  ExpectDataLoss("{" + a + ",\"b\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[4,12]}}", 12,
                 "tensor 'b'");
  ExpectDataLoss("{" + a + ",\"b\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[12,20]}}", 20,
                 "hole");
  ExpectDataLoss("{" + a + "}", 12, "4 bytes after the last tensor");
  ExpectDataLoss("{" + a + "}", 4, "truncated");
  ExpectDataLoss("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[3,2]}}", 3, "'a'");
}

TEST(SafetensorsTest, ShapesAndDtypesThatDisagreeAreDataLossNamingTheTensor) {
  const auto entry = [](const std::string& dtype, const std::string& shape,
                        const std::string& offsets) {
    return "{\"t\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
           ",\"data_offsets\":" + offsets + "}}";
  };
  ExpectDataLoss(entry("F32", "[3]", "[0,8]"), 8, "tensor 't'");
  ExpectDataLoss(entry("F32", "[-1]", "[0,8]"), 8, "tensor 't'");
  ExpectDataLoss(entry("F32", "[2.0]", "[0,8]"), 8, "tensor 't'");
  ExpectDataLoss(entry("F32", "[1099511627776,1099511627776]", "[0,8]"), 8, "tensor 't'");
  ExpectDataLoss(entry("I64", "[2305843009213693952,2]", "[0,0]"), 0, "tensor 't'");
  ExpectDataLoss(entry("F32", "\"2\"", "[0,8]"), 8, "tensor 't'");
  ExpectDataLoss(entry("F32", "[2]", "[0]"), 8, "tensor 't'");
  // Nested a million deep: the error message must not recurse through it.
  const std::string deep = "[" + std::string(1000000, '[') + std::string(1000000, ']') + "]";
  ExpectDataLoss(entry("F32", deep, "[0,8]"), 8, "dimension 0");
  ExpectDataLoss(entry("F32", "[2]", deep), 8, "data_offsets");
  ExpectDataLoss(entry("F16", "[2]", "[0,4]"), 4, "tensor 't' in file");
  ExpectDataLoss(entry("F16", "[2]", "[0,4]"), 4, "dtype 'F16'");
  ExpectDataLoss("{\"t\":[1,2]}", 0, "tensor 't'");
  ExpectDataLoss(
      "{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
      "\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
      1, "'t' twice");
  ExpectDataLoss("[1,2]", 0, "not a JSON object");
  ExpectDataLoss("{\"t\":", 0, "not valid JSON");
}

TEST(SafetensorsTest, BadMetadataIsDataLoss) {
  const std::string t = "\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}";
  ExpectDataLoss("{\"__metadata__\":{\"crc32c/t\":\"xyz\"}," + t + "}", 1, "'xyz'");
  ExpectDataLoss("{\"__metadata__\":{\"crc32c/u\":\"00000000\"}," + t + "}", 1, "'u'");
  ExpectDataLoss("{\"__metadata__\":{\"n\":3}," + t + "}", 1, "'n'");
  ExpectDataLoss("{\"__metadata__\":[]," + t + "}", 1, "__metadata__");
}

TEST(SafetensorsTest, BoolBytesOtherThanZeroAndOneAreDataLoss) {
  TempDir dir;
  const std::string path = dir.File("bool.safetensors");
  WriteBytes(path, HandFile("{\"b\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}",
                            std::string("\x01\x02", 2)));
  StatusOr<std::unique_ptr<SafetensorsReader>> reader = SafetensorsReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  Status status = (*reader)->Read("b").status();
  EXPECT_TRUE(IsDataLoss(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("'b'"));
}

TEST(SafetensorsTest, WriterRejectsBadInputNamingPathAndTensor) {
  TempDir dir;
  const std::string path = dir.File("w.safetensors");
  const Tensor t = Tensor::FromVector<float>({1});
  StatusOr<SafetensorsFileInfo> twice = WriteSafetensorsFile(path, {{"x", t}, {"x", t}});
  EXPECT_TRUE(IsInvalidArgument(twice.status())) << twice.status();
  EXPECT_THAT(twice.status().message(), HasSubstr("'x'"));
  EXPECT_TRUE(IsInvalidArgument(WriteSafetensorsFile(path, {{"__metadata__", t}}).status()));
  EXPECT_TRUE(IsInvalidArgument(WriteSafetensorsFile(path, {{"", t}}).status()));
  StatusOr<SafetensorsFileInfo> resource =
      WriteSafetensorsFile(path, {{"r", Tensor(DataType::kResource, TensorShape({1}))}});
  EXPECT_TRUE(IsInvalidArgument(resource.status())) << resource.status();
  EXPECT_THAT(resource.status().message(), HasSubstr("'r'"));
  EXPECT_THAT(resource.status().message(), HasSubstr(path));
  EXPECT_TRUE(
      IsInvalidArgument(WriteSafetensorsFile(path, {{"x", t}}, {{"crc32c/x", "0"}}).status()));
  EXPECT_TRUE(IsInvalidArgument(WriteSafetensorsFile(path, {{"bad\xff", t}}).status()));
  EXPECT_FALSE(PathExists(path));
  StatusOr<SafetensorsFileInfo> missing = WriteSafetensorsFile(dir.File("no/f"), {{"x", t}});
  EXPECT_TRUE(IsNotFound(missing.status())) << missing.status();
  EXPECT_TRUE(IsNotFound(OpenStatus(dir.File("absent"))));
  EXPECT_THAT(OpenStatus(dir.File("absent")).message(), HasSubstr(dir.File("absent")));
  EXPECT_FALSE(OpenStatus(dir.path()).ok());
  EXPECT_TRUE(ListDirectory(dir.path())->empty());
}

TEST(SafetensorsTest, ConcurrentReadsShareOneReader) {
  TempDir dir;
  const std::string path = dir.File("shared.safetensors");
  const Named tensors = AllKinds();
  ASSERT_TRUE(WriteSafetensorsFile(path, tensors).ok());
  StatusOr<std::unique_ptr<SafetensorsReader>> reader = SafetensorsReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (const auto& [name, original] : tensors) {
          StatusOr<Tensor> read = (*reader)->Read(name);
          if (!read.ok() || Bytes(*read) != Bytes(original)) ++failures[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

TEST(SafetensorsTest, PythonNumpyReadsTheFile) {
  TempDir dir;
  const std::string path = dir.File("interop.safetensors");
  const Named tensors = {
      {"f32", Filled<float>(TensorShape({2, 3}), [](int64_t i) { return 0.5 * i - 1; })},
      {"f64", Filled<double>(TensorShape({4}), [](int64_t i) { return 0.25 * i + 1e6; })},
      {"i32", Filled<int32_t>(TensorShape({3, 1}), [](int64_t i) { return -1000 * i - 1; })},
      {"i64", Filled<int64_t>(TensorShape({2}), [](int64_t i) { return (int64_t{1} << 40) + i; })},
      {"u8", Filled<uint8_t>(TensorShape({5}), [](int64_t i) { return 250 + i; })},
      {"bool", Filled<bool>(TensorShape({4}), [](int64_t i) { return i != 1; })},
      {"bf16", Filled<bfloat16>(TensorShape({3, 2}), [](int64_t i) { return (i - 2) * 1024.5; })},
      {"scalar", Tensor::Scalar<float>(3.25f)},
      {"empty", Filled<double>(TensorShape({0, 3}), [](int64_t) { return 0; })}};
  StatusOr<SafetensorsFileInfo> info = WriteSafetensorsFile(path, tensors);
  ASSERT_TRUE(info.ok()) << info.status();

  StatusOr<std::string> output = RunPythonReader(WEFT_SOURCE_DIR, path);
  ASSERT_TRUE(output.ok()) << output.status();

  std::istringstream lines(*output);
  for (size_t i = 0; i < tensors.size(); ++i) {
    // Named references, not a structured binding: clang 14 cannot capture those in the lambda.
    const std::string& name = tensors[i].first;
    const Tensor& tensor = tensors[i].second;
    SCOPED_TRACE(name);
    std::string line;
    ASSERT_TRUE(std::getline(lines, line)) << *output;
    std::istringstream fields(line);
    std::string got_name, dtype, shape, sum, crc;
    ASSERT_TRUE(fields >> got_name >> dtype >> shape >> sum >> crc) << line;
    EXPECT_EQ(got_name, name);
    EXPECT_EQ(dtype, *SafetensorsDtypeName(tensor.dtype()));
    EXPECT_EQ(shape, tensor.shape().DebugString());
    // Every value is a small multiple of 1/4, so the float64 sums are exact in any order.
    double expected_sum = 0;
    VisitNumericType(tensor.dtype(), [&]<typename T>() {
      for (T v : tensor.flat<T>()) expected_sum += static_cast<double>(v);
    });
    EXPECT_EQ(std::strtod(sum.c_str(), nullptr), expected_sum) << line;
    EXPECT_EQ(crc, Crc32cToHex(info->tensors[i].crc32c)) << line;
  }
  std::string extra;
  EXPECT_FALSE(std::getline(lines, extra)) << "unexpected output: " << extra;
}

}  // namespace
}  // namespace weft::io
