#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/framework/attr_value_util.h"
#include "weft/io/checkpoint_manifest.h"
#include "weft/io/durable_file.h"
#include "weft/io/safetensors.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/testing/kernel_runner.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::kernels {
namespace {

using ::testing::HasSubstr;
using weft::testing::KernelRunner;

// A path as the uint8 vector the ops take.
Tensor PathTensor(const std::string& path) {
  Tensor bytes(DataType::kUInt8, TensorShape({static_cast<int64_t>(path.size())}));
  std::memcpy(bytes.raw_data(), path.data(), path.size());
  return bytes;
}

Tensor BoolTensor(std::initializer_list<bool> values, const TensorShape& shape) {
  Tensor tensor(DataType::kBool, shape);
  bool* data = tensor.data<bool>();
  for (bool value : values) *data++ = value;
  return tensor;
}

class SaveRestoreTest : public ::testing::Test {
 protected:
  // Saves `tensors` as `names` into one shard and writes the manifest for it.
  void SaveWithManifest(const std::vector<std::string>& names, std::vector<Tensor> tensors) {
    std::vector<Tensor> inputs = {PathTensor(directory_)};
    inputs.insert(inputs.end(), tensors.begin(), tensors.end());
    StatusOr<std::vector<Tensor>> saved =
        runner_.Run("SaveV2", inputs,
                    {{"tensor_names", MakeAttrValue(names)},
                     {"shard_file", MakeAttrValue(std::string_view(kShard))}});
    ASSERT_TRUE(saved.ok()) << saved.status();
    StatusOr<std::unique_ptr<io::SafetensorsReader>> reader =
        io::SafetensorsReader::Open(io::JoinPath(directory_, kShard));
    ASSERT_TRUE(reader.ok()) << reader.status();
    io::CheckpointManifest manifest;
    manifest.step = 7;
    manifest.shards.push_back({kShard, (*reader)->file_bytes()});
    for (const io::SafetensorsEntry& entry : (*reader)->tensors()) {
      manifest.tensors[entry.name] = {kShard, entry.dtype, entry.shape, entry.crc32c};
    }
    ASSERT_TRUE(manifest.Write(directory_).ok());
  }

  StatusOr<std::vector<Tensor>> Restore(const std::vector<std::string>& names,
                                        const std::vector<DataType>& dtypes,
                                        const std::vector<TensorShape>& shapes) {
    return runner_.Run("RestoreV2", {PathTensor(directory_)},
                       {{"tensor_names", MakeAttrValue(names)},
                        {"dtypes", MakeAttrValue(dtypes)},
                        {"shapes", MakeAttrValue(shapes)}});
  }

  std::string ShardPath() const { return io::JoinPath(directory_, kShard); }

  static constexpr char kShard[] = "shard-00000-of-00001.safetensors";
  KernelRunner runner_;
  io::testing::TempDir temp_dir_;
  const std::string directory_ = temp_dir_.path();
};

TEST_F(SaveRestoreTest, EveryDtypeRoundTrips) {
  const std::vector<Tensor> tensors = {
      Tensor::FromVector<float>({1.5f, -2, 3, 4, 5, 6}, TensorShape({2, 3})),
      Tensor::FromVector<double>({0.25, -8}),
      Tensor::FromVector<int32_t>({-7, 8, 9}),
      Tensor::Scalar<int64_t>(1234567890123),
      Tensor::FromVector<uint8_t>({0, 255, 17}),
      BoolTensor({true, false, true, true}, TensorShape({2, 2})),
      Tensor(DataType::kFloat, TensorShape({0, 4}))};
  const std::vector<std::string> names = {"dense1/kernel", "d",    "i32",  "global_step",
                                          "bytes",         "mask", "empty"};
  SaveWithManifest(names, tensors);
  std::vector<DataType> dtypes;
  std::vector<TensorShape> shapes;
  for (const Tensor& tensor : tensors) {
    dtypes.push_back(tensor.dtype());
    shapes.push_back(tensor.shape());
  }
  StatusOr<std::vector<Tensor>> restored = Restore(names, dtypes, shapes);
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_EQ(restored->size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_TENSOR_EQ((*restored)[i], tensors[i]) << names[i];
  }
  // A subset in another order reads just those.
  restored = Restore({"i32", "dense1/kernel"}, {DataType::kInt32, DataType::kFloat},
                     {TensorShape({3}), TensorShape({2, 3})});
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_TENSOR_EQ((*restored)[1], tensors[0]);
}

TEST_F(SaveRestoreTest, AMissingTensorNamesItAndTheCheckpoint) {
  SaveWithManifest({"a"}, {Tensor::FromVector<float>({1, 2})});
  StatusOr<std::vector<Tensor>> restored = Restore({"b"}, {DataType::kFloat}, {TensorShape({2})});
  ASSERT_FALSE(restored.ok());
  EXPECT_TRUE(IsNotFound(restored.status())) << restored.status();
  EXPECT_THAT(restored.status().message(), HasSubstr("'b'"));
  EXPECT_THAT(restored.status().message(), HasSubstr(directory_));
}

TEST_F(SaveRestoreTest, AShapeOrDtypeMismatchNamesBothAndTheFile) {
  SaveWithManifest({"w"}, {Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}))});
  StatusOr<std::vector<Tensor>> restored =
      Restore({"w"}, {DataType::kFloat}, {TensorShape({3, 2})});
  ASSERT_FALSE(restored.ok());
  EXPECT_THAT(restored.status().message(), HasSubstr("[2,3]"));
  EXPECT_THAT(restored.status().message(), HasSubstr("[3,2]"));
  EXPECT_THAT(restored.status().message(), HasSubstr(ShardPath()));
  restored = Restore({"w"}, {DataType::kDouble}, {TensorShape({2, 3})});
  ASSERT_FALSE(restored.ok());
  EXPECT_THAT(restored.status().message(), HasSubstr("float32"));
  EXPECT_THAT(restored.status().message(), HasSubstr("float64"));
}

// Rewrites the shard with `edit` applied to its bytes.
void EditFile(const std::string& path, const std::function<void(std::string*)>& edit) {
  StatusOr<std::string> bytes = io::ReadFileToString(path);
  ASSERT_TRUE(bytes.ok());
  edit(&*bytes);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
}

TEST_F(SaveRestoreTest, ATruncatedShardIsDataLossNamingTheFile) {
  SaveWithManifest({"w"}, {Tensor::FromVector<float>({1, 2, 3, 4})});
  EditFile(ShardPath(), [](std::string* bytes) { bytes->resize(bytes->size() - 3); });
  StatusOr<std::vector<Tensor>> restored = Restore({"w"}, {DataType::kFloat}, {TensorShape({4})});
  ASSERT_FALSE(restored.ok());
  EXPECT_TRUE(IsDataLoss(restored.status())) << restored.status();
  EXPECT_THAT(restored.status().message(), HasSubstr(ShardPath()));
}

TEST_F(SaveRestoreTest, AFlippedBitIsACrcErrorNamingTheTensor) {
  SaveWithManifest({"w"}, {Tensor::FromVector<float>({1, 2, 3, 4})});
  EditFile(ShardPath(), [](std::string* bytes) { bytes->back() ^= 0x10; });
  StatusOr<std::vector<Tensor>> restored = Restore({"w"}, {DataType::kFloat}, {TensorShape({4})});
  ASSERT_FALSE(restored.ok());
  EXPECT_TRUE(IsDataLoss(restored.status())) << restored.status();
  EXPECT_THAT(restored.status().message(), HasSubstr("'w'"));
  EXPECT_THAT(restored.status().message(), HasSubstr("CRC32C"));
}

TEST_F(SaveRestoreTest, AMissingManifestNamesIt) {
  StatusOr<std::vector<Tensor>> restored = Restore({"w"}, {DataType::kFloat}, {TensorShape({4})});
  ASSERT_FALSE(restored.ok());
  EXPECT_THAT(restored.status().message(), HasSubstr(io::kCheckpointManifestName));
}

TEST_F(SaveRestoreTest, BadSaveArgumentsAreErrors) {
  StatusOr<std::vector<Tensor>> saved =
      runner_.Run("SaveV2", {PathTensor(directory_), Tensor::FromVector<float>({1})},
                  {{"tensor_names", MakeAttrValue(std::vector<std::string>{"w"})},
                   {"shard_file", MakeAttrValue(std::string_view("../escape.safetensors"))}});
  ASSERT_FALSE(saved.ok());
  EXPECT_THAT(saved.status().message(), HasSubstr("plain file name"));
  saved = runner_.Run("SaveV2",
                      {PathTensor(directory_ + "/missing/dir"), Tensor::FromVector<float>({1})},
                      {{"tensor_names", MakeAttrValue(std::vector<std::string>{"w"})},
                       {"shard_file", MakeAttrValue(std::string_view("s.safetensors"))}});
  ASSERT_FALSE(saved.ok());
  EXPECT_THAT(saved.status().message(), HasSubstr(directory_ + "/missing/dir"));
}

}  // namespace
}  // namespace weft::kernels
