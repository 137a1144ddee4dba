#include "weft/io/checkpoint_manifest.h"

#include <functional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "weft/io/durable_file.h"
#include "weft/io/testing/io_test_util.h"

namespace weft::io {
namespace {

using testing::ReadBytes;
using testing::TempDir;

using ::testing::HasSubstr;
using Json = nlohmann::json;

CheckpointManifest Sample() {
  CheckpointManifest manifest;
  manifest.step = 200;
  manifest.replicas = 2;
  manifest.shards = {{"shard-00000-of-00002.safetensors", 1234},
                     {"shard-00001-of-00002.safetensors", 5678}};
  manifest.tensors["dense1/kernel"] = {"shard-00000-of-00002.safetensors", DataType::kFloat,
                                       TensorShape({784, 256}), 0x1a2b3c4d};
  manifest.tensors["dense1/bias"] = {"shard-00001-of-00002.safetensors", DataType::kFloat,
                                     TensorShape({256}), 0xdeadbeef};
  manifest.tensors["global_step"] = {"shard-00001-of-00002.safetensors", DataType::kInt64,
                                     TensorShape(), 0};
  return manifest;
}

void ExpectSame(const CheckpointManifest& a, const CheckpointManifest& b) {
  EXPECT_EQ(a.format_version, b.format_version);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.replicas, b.replicas);
  ASSERT_EQ(a.shards.size(), b.shards.size());
  for (size_t i = 0; i < a.shards.size(); ++i) {
    EXPECT_EQ(a.shards[i].file, b.shards[i].file);
    EXPECT_EQ(a.shards[i].bytes, b.shards[i].bytes);
  }
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, tensor] : a.tensors) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(b.tensors.contains(name));
    const ManifestTensor& other = b.tensors.at(name);
    EXPECT_EQ(tensor.shard, other.shard);
    EXPECT_EQ(tensor.dtype, other.dtype);
    EXPECT_EQ(tensor.shape, other.shape);
    EXPECT_EQ(tensor.crc32c, other.crc32c);
  }
}

TEST(CheckpointManifestTest, RoundTripsThroughTheDirectory) {
  TempDir dir;
  const CheckpointManifest manifest = Sample();
  ASSERT_TRUE(manifest.Write(dir.path()).ok());
  EXPECT_EQ(ListDirectory(dir.path()).value(), std::vector<std::string>{kCheckpointManifestName});
  StatusOr<CheckpointManifest> read = CheckpointManifest::Read(dir.path());
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectSame(manifest, *read);

  const Json json = Json::parse(ReadBytes(dir.File(kCheckpointManifestName)));
  EXPECT_EQ(json["format_version"], 1);
  EXPECT_EQ(json["step"], 200);
  EXPECT_EQ(json["tensors"]["dense1/kernel"]["crc32c"], "1a2b3c4d");
  EXPECT_EQ(json["tensors"]["dense1/kernel"]["dtype"], "F32");
  EXPECT_EQ(json["tensors"]["global_step"]["crc32c"], "00000000");
  EXPECT_EQ(json["tensors"]["global_step"]["shape"], Json::array());
  EXPECT_EQ(json["shards"][1]["bytes"], 5678);
}

TEST(CheckpointManifestTest, ParsesTheDocumentedExample) {
  const std::string text = R"({"format_version":1,"step":200,"replicas":2,
      "shards":[{"file":"shard-00000-of-00001.safetensors","bytes":1234}],
      "tensors":{"dense1/kernel":{"shard":"shard-00000-of-00001.safetensors","dtype":"F32",
                                  "shape":[784,256],"crc32c":"1a2b3c4d"}},
      "written_by":"a future field that readers ignore"})";
  StatusOr<CheckpointManifest> manifest = CheckpointManifest::FromJson(text, "m.json");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->step, 200);
  EXPECT_EQ(manifest->replicas, 2);
  ASSERT_EQ(manifest->shards.size(), 1u);
  EXPECT_EQ(manifest->shards[0].bytes, 1234u);
  const ManifestTensor& kernel = manifest->tensors.at("dense1/kernel");
  EXPECT_EQ(kernel.dtype, DataType::kFloat);
  EXPECT_EQ(kernel.shape, TensorShape({784, 256}));
  EXPECT_EQ(kernel.crc32c, 0x1a2b3c4du);
}

struct BadCase {
  const char* what;
  std::function<void(Json&)> change;
  Code code;
  std::vector<std::string> named;  // besides the file
};

TEST(CheckpointManifestTest, BadInputIsAnErrorNamingTheFileAndTensor) {
  const std::string path = "/ckpt/step-200/manifest.json";
  const Json good = Json::parse(Sample().ToJson());
  const std::string kernel = "dense1/kernel";
  const std::vector<BadCase> cases = {
      {"newer version",
       [](Json& j) { j["format_version"] = 2; },
       Code::kFailedPrecondition,
       {"format version 2"}},
      {"version as text", [](Json& j) { j["format_version"] = "1"; }, Code::kDataLoss, {}},
      {"no version", [](Json& j) { j.erase("format_version"); }, Code::kDataLoss, {}},
      {"negative step", [](Json& j) { j["step"] = -1; }, Code::kDataLoss, {"step"}},
      {"fractional step", [](Json& j) { j["step"] = 1.5; }, Code::kDataLoss, {"step"}},
      {"no replicas", [](Json& j) { j.erase("replicas"); }, Code::kDataLoss, {"replicas"}},
      {"zero replicas", [](Json& j) { j["replicas"] = 0; }, Code::kDataLoss, {"replicas"}},
      {"shards not a list", [](Json& j) { j["shards"] = "x"; }, Code::kDataLoss, {"shards"}},
      {"shard without bytes",
       [](Json& j) { j["shards"][0].erase("bytes"); },
       Code::kDataLoss,
       {"shard"}},
      {"negative shard bytes",
       [](Json& j) { j["shards"][0]["bytes"] = -4; },
       Code::kDataLoss,
       {"shard"}},
      {"escaping shard",
       [](Json& j) { j["shards"][0]["file"] = "../elsewhere"; },
       Code::kDataLoss,
       {"../elsewhere"}},
      {"absolute shard",
       [](Json& j) { j["shards"][0]["file"] = "/etc/passwd"; },
       Code::kDataLoss,
       {"/etc/passwd"}},
      {"duplicate shard",
       [](Json& j) { j["shards"][1]["file"] = j["shards"][0]["file"]; },
       Code::kDataLoss,
       {"twice"}},
      {"tensors not an object",
       [](Json& j) { j["tensors"] = Json::array(); },
       Code::kDataLoss,
       {"tensors"}},
      {"tensor not an object",
       [&](Json& j) { j["tensors"][kernel] = 3; },
       Code::kDataLoss,
       {kernel}},
      {"unlisted shard",
       [&](Json& j) { j["tensors"][kernel]["shard"] = "shard-9.safetensors"; },
       Code::kDataLoss,
       {kernel, "shard-9.safetensors"}},
      {"no shard",
       [&](Json& j) { j["tensors"][kernel].erase("shard"); },
       Code::kDataLoss,
       {kernel}},
      {"unknown dtype",
       [&](Json& j) { j["tensors"][kernel]["dtype"] = "F16"; },
       Code::kDataLoss,
       {kernel, "F16"}},
      {"no dtype",
       [&](Json& j) { j["tensors"][kernel].erase("dtype"); },
       Code::kDataLoss,
       {kernel}},
      {"negative dimension",
       [&](Json& j) {
         j["tensors"][kernel]["shape"] = {784, -1};
       },
       Code::kDataLoss,
       {kernel}},
      {"shape not a list",
       [&](Json& j) { j["tensors"][kernel]["shape"] = 5; },
       Code::kDataLoss,
       {kernel}},
      {"bad crc",
       [&](Json& j) { j["tensors"][kernel]["crc32c"] = "1a2b3c4z"; },
       Code::kDataLoss,
       {kernel}},
      {"crc as number",
       [&](Json& j) { j["tensors"][kernel]["crc32c"] = 12; },
       Code::kDataLoss,
       {kernel}},
  };
  for (const BadCase& bad : cases) {
    SCOPED_TRACE(bad.what);
    Json json = good;
    bad.change(json);
    StatusOr<CheckpointManifest> parsed = CheckpointManifest::FromJson(json.dump(), path);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), bad.code) << parsed.status();
    EXPECT_THAT(parsed.status().message(), HasSubstr(path));
    for (const std::string& name : bad.named) {
      EXPECT_THAT(parsed.status().message(), HasSubstr(name));
    }
  }
  // Nested a million deep (built as text: nlohmann's own copy and dump recurse): the error
  // message must not recurse through it.
  std::string deep = good.dump();
  const std::string kernel_shape = "\"shape\":[784,256]";
  ASSERT_NE(deep.find(kernel_shape), std::string::npos);
  deep.replace(deep.find(kernel_shape), kernel_shape.size(),
               "\"shape\":[" + std::string(1000000, '[') + std::string(1000000, ']') + "]");
  StatusOr<CheckpointManifest> nested = CheckpointManifest::FromJson(deep, path);
  EXPECT_TRUE(IsDataLoss(nested.status())) << nested.status();
  EXPECT_THAT(nested.status().message(), HasSubstr(kernel));
  for (const char* text : {"", "not json", "[1,2]", "{\"format_version\":1", "null"}) {
    StatusOr<CheckpointManifest> parsed = CheckpointManifest::FromJson(text, path);
    EXPECT_TRUE(IsDataLoss(parsed.status())) << text << ": " << parsed.status();
    EXPECT_THAT(parsed.status().message(), HasSubstr(path));
  }
}

// A table saved in two parts, listed whole beside them.
CheckpointManifest SampleWithParts() {
  CheckpointManifest manifest = Sample();
  manifest.tensors["emb/part_0"] = {"shard-00000-of-00002.safetensors", DataType::kFloat,
                                    TensorShape({3, 16}), 1};
  manifest.tensors["emb/part_1"] = {"shard-00001-of-00002.safetensors", DataType::kFloat,
                                    TensorShape({2, 16}), 2};
  manifest.partitioned["emb"] = {
      DataType::kFloat, TensorShape({5, 16}), {{"emb/part_0", 0}, {"emb/part_1", 3}}};
  return manifest;
}

TEST(CheckpointManifestTest, PartitionedTensorsRoundTripAndBadPartsAreNamed) {
  TempDir dir;
  ASSERT_TRUE(SampleWithParts().Write(dir.path()).ok());
  StatusOr<CheckpointManifest> read = CheckpointManifest::Read(dir.path());
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectSame(SampleWithParts(), *read);
  const ManifestPartitioned& emb = read->partitioned.at("emb");
  EXPECT_EQ(emb.dtype, DataType::kFloat);
  EXPECT_EQ(emb.shape, TensorShape({5, 16}));
  ASSERT_EQ(emb.parts.size(), 2u);
  EXPECT_EQ(emb.parts[1].tensor, "emb/part_1");
  EXPECT_EQ(emb.parts[1].offset, 3);
  // A manifest without parts writes no "partitioned" at all (older readers see nothing new).
  EXPECT_FALSE(Json::parse(Sample().ToJson()).contains("partitioned"));

  const Json good = Json::parse(SampleWithParts().ToJson());
  const std::vector<BadCase> cases = {
      {"not an object", [](Json& j) { j["partitioned"] = 1; }, Code::kDataLoss, {"partitioned"}},
      {"missing part",
       [](Json& j) { j["partitioned"]["emb"]["parts"][1]["tensor"] = "emb/part_9"; },
       Code::kDataLoss,
       {"'emb'", "emb/part_9"}},
      {"gap",
       [](Json& j) { j["partitioned"]["emb"]["parts"][1]["offset"] = 4; },
       Code::kDataLoss,
       {"'emb'", "row 4"}},
      {"too few rows",
       [](Json& j) {
         j["partitioned"]["emb"]["shape"] = {6, 16};
       },
       Code::kDataLoss,
       {"'emb'", "6 rows"}},
      {"other width",
       [](Json& j) {
         j["partitioned"]["emb"]["shape"] = {5, 8};
       },
       Code::kDataLoss,
       {"'emb'", "[5,8]", "[3,16]"}},
      {"also a tensor",
       [](Json& j) { j["partitioned"]["dense1/bias"] = j["partitioned"]["emb"]; },
       Code::kDataLoss,
       {"dense1/bias"}},
      {"negative offset",
       [](Json& j) { j["partitioned"]["emb"]["parts"][0]["offset"] = -1; },
       Code::kDataLoss,
       {"'emb'", "part 0"}},
      {"no parts",
       [](Json& j) { j["partitioned"]["emb"]["parts"] = Json::array(); },
       Code::kDataLoss,
       {"'emb'", "no parts"}},
  };
  for (const BadCase& bad : cases) {
    SCOPED_TRACE(bad.what);
    Json json = good;
    bad.change(json);
    StatusOr<CheckpointManifest> parsed = CheckpointManifest::FromJson(json.dump(), "m.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), bad.code) << parsed.status();
    for (const std::string& name : bad.named) {
      EXPECT_THAT(parsed.status().message(), HasSubstr(name));
    }
  }
}

TEST(CheckpointManifestTest, ReadOfAMissingManifestIsNotFoundNamingIt) {
  TempDir dir;
  StatusOr<CheckpointManifest> read = CheckpointManifest::Read(dir.path());
  EXPECT_TRUE(IsNotFound(read.status())) << read.status();
  EXPECT_THAT(read.status().message(), HasSubstr(dir.File(kCheckpointManifestName)));
}

TEST(CheckpointManifestTest, WriteRefusesAManifestItCouldNotReadBack) {
  TempDir dir;
  CheckpointManifest manifest = Sample();
  manifest.tensors["dense1/bias"].shard = "missing.safetensors";
  Status status = manifest.Write(dir.path());
  EXPECT_TRUE(IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("dense1/bias"));
  manifest = Sample();
  manifest.tensors["dense1/bias"].dtype = DataType::kResource;
  EXPECT_TRUE(IsInvalidArgument(manifest.Write(dir.path())));
  manifest = Sample();
  manifest.tensors["bad\xff"] = manifest.tensors["dense1/bias"];
  EXPECT_TRUE(IsInvalidArgument(manifest.Write(dir.path())));
  EXPECT_TRUE(ListDirectory(dir.path())->empty());
}

}  // namespace
}  // namespace weft::io
