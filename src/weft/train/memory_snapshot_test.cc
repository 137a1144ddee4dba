#include "weft/train/memory_snapshot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/io/durable_file.h"
#include "weft/io/safetensors.h"
#include "weft/io/testing/io_test_util.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;

TEST(MemorySnapshotTest, WritesAndReadsTheStateAndItsPosition) {
  io::testing::TempDir dir;
  const std::string directory = io::JoinPath(dir.path(), "job/worker-1");
  StatusOr<std::optional<MemorySnapshot>> none = ReadMemorySnapshot(directory);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());

  MemorySnapshot snapshot;
  snapshot.state["dense1/kernel"] = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  snapshot.state["dense1/kernel/Momentum"] = Tensor::FromVector<float>({0.5f, 0, 0, -1});
  snapshot.position = {412, 1, 12};
  ASSERT_TRUE(WriteMemorySnapshot(directory, snapshot).ok());
  // A second write replaces the first.
  snapshot.position.global_step = 413;
  ASSERT_TRUE(WriteMemorySnapshot(directory, snapshot).ok());

  StatusOr<std::optional<MemorySnapshot>> read = ReadMemorySnapshot(directory);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->position.global_step, 413);
  EXPECT_EQ((*read)->position.epoch, 1);
  EXPECT_EQ((*read)->position.batch_index, 12);
  ASSERT_EQ((*read)->state.size(), 2u);
  const Tensor& kernel = (*read)->state.at("dense1/kernel");
  EXPECT_EQ(kernel.shape(), TensorShape({2, 2}));
  EXPECT_EQ(kernel.data<float>()[3], 4.0f);
}

TEST(MemorySnapshotTest, ACorruptOrForeignFileIsDataLossNamingIt) {
  io::testing::TempDir dir;
  const std::string path = dir.File("state.safetensors");
  io::testing::WriteBytes(path, "not a safetensors file at all");
  Status status = ReadMemorySnapshot(dir.path()).status();
  EXPECT_TRUE(IsDataLoss(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(path));

  // A safetensors file that is not a snapshot: no position in its metadata.
  ASSERT_TRUE(
      io::WriteSafetensorsFile(path, {{"w", Tensor::FromVector<float>({1})}}).status().ok());
  status = ReadMemorySnapshot(dir.path()).status();
  EXPECT_TRUE(IsDataLoss(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("weft/global_step"));
}

TEST(MemorySnapshotTest, AnUnwritableDirectoryIsAnErrorNamingIt) {
  io::testing::TempDir dir;
  io::testing::WriteBytes(dir.File("file"), "x");
  MemorySnapshot snapshot;
  snapshot.state["w"] = Tensor::FromVector<float>({1});
  const Status status = WriteMemorySnapshot(dir.File("file/worker-0"), snapshot);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("file"));
}

}  // namespace
}  // namespace weft::train
