#include "weft/checkpoint/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weft/checkpoint/checkpoint_manager.h"
#include "weft/checkpoint/testing/checkpoint_test_util.h"
#include "weft/core/notification.h"
#include "weft/core/str_util.h"
#include "weft/distribute/strategy.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/io/checkpoint_manifest.h"
#include "weft/io/crc32c.h"
#include "weft/io/durable_file.h"
#include "weft/io/safetensors.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::checkpoint {
namespace {

using distribute::testing::MakeSession;
using ::testing::HasSubstr;

using testing::BuildTestModel;
using testing::CheckAll;
using testing::SmallSpecs;
using testing::TestModel;
using testing::TestVariableSpec;

// The small test model on `devices` devices, built and initialized (a test failure otherwise).
TestModel BuildModel(int devices, bool with_sum = false) {
  StatusOr<TestModel> model = BuildTestModel(devices, SmallSpecs(), with_sum);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(model).value() : TestModel();
}

void SetEvery(TestModel& model, int64_t value) {
  Status status = testing::SetAll(model, value);
  ASSERT_TRUE(status.ok()) << status;
}

void ExpectAll(TestModel& model, int64_t value) {
  Status status = CheckAll(model, value);
  EXPECT_TRUE(status.ok()) << status;
}

TEST(CheckpointTest, SaveThenRestoreRoundTripsEveryVariableAndValue) {
  io::testing::TempDir dir;
  TestModel model = BuildModel(1);
  ASSERT_NE(model.session, nullptr);
  SetEvery(model, 42);
  const std::string path = dir.File("ckpt-42");
  ASSERT_TRUE(model.checkpoint->Save(*model.session, path, 42, {{"global_step", 42}}).ok());
  SetEvery(model, 3);
  StatusOr<RestoredCheckpoint> restored = model.checkpoint->Restore(*model.session, path);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->step, 42);
  EXPECT_EQ(restored->values.at("global_step"), 42);
  ExpectAll(model, 42);
  // The manifest lists every tensor under its variable's name, nothing else beside the shard.
  StatusOr<io::CheckpointManifest> manifest = io::CheckpointManifest::Read(path);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->tensors.size(), SmallSpecs().size() + 1);
  EXPECT_TRUE(manifest->tensors.contains("dense1/kernel"));
  EXPECT_EQ(manifest->tensors.at("dense1/kernel").shape, TensorShape({3, 4}));
  EXPECT_EQ(*io::ListDirectory(path),
            (std::vector<std::string>{"manifest.json", "shard-00000-of-00001.safetensors"}));
  // No temporary directory is left next to it.
  EXPECT_EQ(*io::ListDirectory(dir.path()), std::vector<std::string>{"ckpt-42"});
}

// Another tool reads a checkpoint: Python and NumPy, through the safetensors layout alone, find
// every tensor under its variable's name with its values (and the CRC32C the manifest records).
TEST(CheckpointTest, PythonAndNumpyReadACheckpointShard) {
  io::testing::TempDir dir;
  TestModel model = BuildModel(2);
  ASSERT_NE(model.session, nullptr);
  SetEvery(model, 3);
  ASSERT_TRUE(model.checkpoint->Save(*model.session, dir.File("c"), 3, {{"global_step", 3}}).ok());
  StatusOr<io::CheckpointManifest> manifest = io::CheckpointManifest::Read(dir.File("c"));
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  StatusOr<std::string> output =
      io::testing::RunPythonReader(WEFT_SOURCE_DIR, dir.File("c/shard-00000-of-00001.safetensors"));
  ASSERT_TRUE(output.ok()) << output.status();
  // "name dtype shape sum crc32c" per tensor.
  for (const TestVariableSpec& spec : SmallSpecs()) {
    const io::ManifestTensor& saved = manifest->tensors.at(spec.name);
    const std::string line =
        StrCat(spec.name, " ", *io::SafetensorsDtypeName(spec.dtype), " ", spec.shape.DebugString(),
               " ", 3 * spec.shape.num_elements(), ".0 ", io::Crc32cToHex(saved.crc32c));
    EXPECT_THAT(*output, HasSubstr(line)) << *output;
  }
  EXPECT_THAT(*output, HasSubstr("global_step I64 [] 3.0 "));
}

// A mixed-precision model's bfloat16 variable: saved as safetensors BF16, read by NumPy (widened to
// float32), and restored on one device and on two.
TEST(CheckpointTest, BFloat16VariablesSaveRestoreAndReadInNumpy) {
  const std::vector<TestVariableSpec> specs = {
      {"half/kernel", TensorShape({3, 4}), DataType::kBFloat16},
      {"half/bias", TensorShape({4}), DataType::kFloat}};
  io::testing::TempDir dir;
  StatusOr<TestModel> model = BuildTestModel(1, specs);
  ASSERT_TRUE(model.ok()) << model.status();
  SetEvery(*model, 3);
  ASSERT_TRUE(
      model->checkpoint->Save(*model->session, dir.File("c"), 3, {{"global_step", 3}}).ok());
  StatusOr<io::CheckpointManifest> manifest = io::CheckpointManifest::Read(dir.File("c"));
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->tensors.at("half/kernel").dtype, DataType::kBFloat16);
  StatusOr<std::string> output =
      io::testing::RunPythonReader(WEFT_SOURCE_DIR, dir.File("c/shard-00000-of-00001.safetensors"));
  ASSERT_TRUE(output.ok()) << output.status();
  EXPECT_THAT(*output,
              HasSubstr(StrCat("half/kernel BF16 [3,4] 36.0 ",
                               io::Crc32cToHex(manifest->tensors.at("half/kernel").crc32c))))
      << *output;

  for (int devices : {1, 2}) {
    SCOPED_TRACE(StrCat(devices, " devices"));
    StatusOr<TestModel> other = BuildTestModel(devices, specs);
    ASSERT_TRUE(other.ok()) << other.status();
    SetEvery(*other, 5);
    StatusOr<RestoredCheckpoint> restored =
        other->checkpoint->Restore(*other->session, dir.File("c"));
    ASSERT_TRUE(restored.ok()) << restored.status();
    ExpectAll(*other, 3);
  }
}

TEST(CheckpointTest, RestoresAcrossReplicaCounts) {
  io::testing::TempDir dir;
  TestModel two = BuildModel(2);
  ASSERT_NE(two.session, nullptr);
  SetEvery(two, 7);
  ASSERT_TRUE(two.checkpoint->Save(*two.session, dir.File("from2"), 7, {{"global_step", 7}}).ok());
  // Mirrored variables are saved once, under their names without replica prefixes.
  StatusOr<io::CheckpointManifest> manifest = io::CheckpointManifest::Read(dir.File("from2"));
  ASSERT_TRUE(manifest.ok());
  EXPECT_EQ(manifest->tensors.size(), SmallSpecs().size() + 1);
  EXPECT_EQ(manifest->replicas, 2);

  TestModel one = BuildModel(1);
  ASSERT_NE(one.session, nullptr);
  ASSERT_TRUE(one.checkpoint->Restore(*one.session, dir.File("from2")).ok());
  ExpectAll(one, 7);
  SetEvery(one, 9);
  ASSERT_TRUE(one.checkpoint->Save(*one.session, dir.File("from1"), 9, {{"global_step", 9}}).ok());
  TestModel three = BuildModel(3);
  ASSERT_NE(three.session, nullptr);
  ASSERT_TRUE(three.checkpoint->Restore(*three.session, dir.File("from1")).ok());
  ExpectAll(three, 9);  // every component of every mirrored variable
}

TEST(CheckpointTest, ASyncOnReadSumIsSavedAggregatedAndSplitOnRestore) {
  io::testing::TempDir dir;
  TestModel two = BuildModel(2, /*with_sum=*/true);
  ASSERT_NE(two.session, nullptr);
  // Each of the 2 components holds 1 (Ones): the checkpoint holds their sum, 2.
  ASSERT_TRUE(two.checkpoint->Save(*two.session, dir.File("c"), 1, {{"global_step", 1}}).ok());
  TestModel four = BuildModel(4, /*with_sum=*/true);
  ASSERT_NE(four.session, nullptr);
  ASSERT_TRUE(four.checkpoint->Restore(*four.session, dir.File("c")).ok());
  std::vector<Tensor> reads = testing::ReadAll(four).value();
  for (size_t i = reads.size() - 4; i < reads.size(); ++i) {
    EXPECT_FLOAT_EQ(*reads[i].data<float>(), 0.5f);  // 4 components summing to 2
  }
}

TEST(CheckpointTest, MismatchedModelsAreErrorsNamingTheTensorAndShapes) {
  io::testing::TempDir dir;
  TestModel model = BuildModel(1);
  ASSERT_NE(model.session, nullptr);
  ASSERT_TRUE(model.checkpoint->Save(*model.session, dir.File("c"), 1, {{"global_step", 1}}).ok());
  // Another model: dense1/kernel is [3, 5] there.
  Scope root = Scope::NewRootScope();
  Variable other = Variable::Create(root, "dense1/kernel", TensorShape({3, 5}), DataType::kFloat,
                                    Initializer::Zeros());
  CheckpointObjects objects;
  objects.variables = {other};
  auto checkpoint = Checkpoint::Create(root, objects).value();
  auto session = MakeSession(root, 1);
  ASSERT_NE(session, nullptr);
  StatusOr<RestoredCheckpoint> restored = checkpoint->Restore(*session, dir.File("c"));
  ASSERT_FALSE(restored.ok());
  EXPECT_THAT(restored.status().message(), HasSubstr("dense1/kernel"));
  EXPECT_THAT(restored.status().message(), HasSubstr("[3,4]"));
  EXPECT_THAT(restored.status().message(), HasSubstr("[3,5]"));
  EXPECT_THAT(restored.status().message(), HasSubstr(dir.File("c")));
  // A tensor the checkpoint lacks.
  Scope root2 = Scope::NewRootScope();
  Variable extra = Variable::Create(root2, "dense9/kernel", TensorShape({2}), DataType::kFloat,
                                    Initializer::Zeros());
  objects.variables = {extra};
  checkpoint = Checkpoint::Create(root2, objects).value();
  session = MakeSession(root2, 1);
  ASSERT_NE(session, nullptr);
  restored = checkpoint->Restore(*session, dir.File("c"));
  ASSERT_FALSE(restored.ok());
  EXPECT_TRUE(IsNotFound(restored.status()));
  EXPECT_THAT(restored.status().message(), HasSubstr("dense9/kernel"));
  // No checkpoint at all.
  restored = checkpoint->Restore(*session, dir.File("nothing"));
  ASSERT_FALSE(restored.ok());
  EXPECT_THAT(restored.status().message(), HasSubstr(dir.File("nothing")));
}

TEST(CheckpointTest, ADuplicateNameIsRefusedAtBuildTime) {
  Scope root = Scope::NewRootScope();
  Variable v =
      Variable::Create(root, "v", TensorShape({2}), DataType::kFloat, Initializer::Zeros());
  CheckpointObjects objects;
  objects.variables = {v};
  objects.values = {"v"};
  StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Create(root, objects);
  ASSERT_FALSE(checkpoint.ok());
  EXPECT_THAT(checkpoint.status().message(), HasSubstr("'v'"));
}

TEST(CheckpointTest, AsyncSaveWritesTheValuesOfItsStepBoundary) {
  io::testing::TempDir dir;
  TestModel model = BuildModel(2);
  ASSERT_NE(model.session, nullptr);
  SetEvery(model, 5);
  Notification written;
  Status written_status;
  ASSERT_TRUE(model.checkpoint
                  ->SaveAsync(*model.session, dir.File("c"), 5, {{"global_step", 5}},
                              [&](const Status& status) {
                                written_status = status;
                                written.Notify();
                                return status;
                              })
                  .ok());
  SetEvery(model, 6);  // training goes on: the snapshot keeps step 5's values
  ASSERT_TRUE(model.checkpoint->WaitForSave().ok());
  ASSERT_TRUE(written.HasBeenNotified());
  ASSERT_TRUE(written_status.ok()) << written_status;
  ExpectAll(model, 6);
  ASSERT_TRUE(model.checkpoint->Restore(*model.session, dir.File("c")).ok());
  ExpectAll(model, 5);
}

TEST(CheckpointManagerTest, KeepsTheNewestAndIndexesTheLatest) {
  io::testing::TempDir dir;
  TestModel model = BuildModel(1);
  ASSERT_NE(model.session, nullptr);
  CheckpointManager manager(model.checkpoint.get(), dir.File("run"), /*max_to_keep=*/2);
  EXPECT_EQ(*manager.LatestCheckpoint(), "");
  for (int64_t step : {10, 20, 30}) {
    SetEvery(model, step);
    ASSERT_TRUE(manager.Save(*model.session, step, {{"global_step", step}}).ok());
  }
  EXPECT_EQ(*manager.LatestCheckpoint(), dir.File("run") + "/ckpt-30");
  EXPECT_EQ(*io::ListDirectory(dir.File("run")),
            (std::vector<std::string>{"checkpoint.json", "ckpt-20", "ckpt-30"}));
  StatusOr<std::optional<CheckpointIndex>> index = ReadCheckpointIndex(dir.File("run"));
  ASSERT_TRUE(index.ok() && index->has_value());
  EXPECT_EQ((*index)->checkpoints, (std::vector<std::string>{"ckpt-20", "ckpt-30"}));
  SetEvery(model, 0);
  StatusOr<std::optional<RestoredCheckpoint>> restored = manager.RestoreLatest(*model.session);
  ASSERT_TRUE(restored.ok() && restored->has_value());
  EXPECT_EQ((*restored)->step, 30);
  ExpectAll(model, 30);
  // Async saves move the index too.
  ASSERT_TRUE(manager.SaveAsync(*model.session, 40, {{"global_step", 40}}).ok());
  ASSERT_TRUE(manager.WaitForSave().ok());
  EXPECT_EQ(*manager.LatestCheckpoint(), dir.File("run") + "/ckpt-40");
}

TEST(CheckpointManagerTest, ACorruptIndexIsAnErrorNamingIt) {
  io::testing::TempDir dir;
  ASSERT_TRUE(io::CreateDirectories(dir.File("run")).ok());
  for (const std::string& text :
       {std::string("{not json"), std::string("{\"latest\": 3, \"checkpoints\": []}"),
        std::string("{\"latest\": \"ckpt-9\", \"checkpoints\": [\"ckpt-9\"]}"),
        std::string("{\"latest\": \"\", \"checkpoints\": [\"../../etc\"]}")}) {
    ASSERT_TRUE(io::WriteFileDurably(dir.File("run/checkpoint.json"), text).ok());
    StatusOr<std::optional<CheckpointIndex>> index = ReadCheckpointIndex(dir.File("run"));
    ASSERT_FALSE(index.ok()) << text;
    EXPECT_THAT(index.status().message(), HasSubstr("checkpoint.json")) << text;
  }
}

// The save's directory cannot take the new checkpoint: read-only (when not root, which ignores
// permissions) or, for anyone, replaced by a file. The save fails naming the path; the index
// still names the previous checkpoint, which restores.
TEST(CheckpointManagerTest, AFailedSaveNamesThePathAndKeepsThePrevious) {
  io::testing::TempDir dir;
  TestModel model = BuildModel(1);
  ASSERT_NE(model.session, nullptr);
  const std::string run = dir.File("run");
  CheckpointManager manager(model.checkpoint.get(), run, 3);
  SetEvery(model, 1);
  ASSERT_TRUE(manager.Save(*model.session, 1, {{"global_step", 1}}).ok());
  SetEvery(model, 2);
  if (geteuid() != 0) {
    ASSERT_EQ(chmod(run.c_str(), 0555), 0);
    Status failed = manager.Save(*model.session, 2, {{"global_step", 2}});
    ASSERT_EQ(chmod(run.c_str(), 0755), 0);
    ASSERT_FALSE(failed.ok());
    EXPECT_THAT(failed.message(), HasSubstr(run));
  }
  ASSERT_EQ(rename(run.c_str(), dir.File("aside").c_str()), 0);
  ASSERT_TRUE(io::WriteFileDurably(run, "not a directory").ok());
  Status failed = manager.Save(*model.session, 3, {{"global_step", 3}});
  ASSERT_EQ(unlink(run.c_str()), 0);
  ASSERT_EQ(rename(dir.File("aside").c_str(), run.c_str()), 0);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.message(), HasSubstr(run));
  EXPECT_EQ(*manager.LatestCheckpoint(), run + "/ckpt-1");
  ASSERT_TRUE(manager.RestoreLatest(*model.session).ok());
  ExpectAll(model, 1);
}

}  // namespace
}  // namespace weft::checkpoint
