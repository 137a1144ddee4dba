// A variable cut into parts along its rows (a ShardedVariable's "emb/part_<i>", with its optimizer
// slots "emb/part_<i>/Adagrad") is saved as one partitioned tensor and restores into another
// number of parts, into one whole variable, and back; a whole of another size is refused naming
// it and both shapes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/checkpoint/checkpoint.h"
#include "weft/distribute/testing/session_test_util.h"
#include "weft/io/checkpoint_manifest.h"
#include "weft/io/testing/io_test_util.h"
#include "weft/testing/tensor_matchers.h"

namespace weft::checkpoint {
namespace {

using distribute::testing::MakeSession;
using ::testing::HasSubstr;

// A variable of the test: `rows` x 2 floats, rows [offset, offset + rows) of its whole, which
// numbers element (r, c) of the whole base + 10 * r + c.
struct PartSpec {
  std::string name;
  int64_t rows;
  int64_t offset;
  float base;
};

Tensor Expected(const PartSpec& spec) {
  Tensor value(DataType::kFloat, TensorShape({spec.rows, 2}));
  for (int64_t r = 0; r < spec.rows; ++r) {
    for (int64_t c = 0; c < 2; ++c) {
      value.data<float>()[r * 2 + c] =
          spec.base + 10.0f * static_cast<float>(spec.offset + r) + static_cast<float>(c);
    }
  }
  return value;
}

struct PartsModel {
  std::vector<PartSpec> specs;
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<Session> session;
  std::vector<std::string> reads;
};

// The variables of `specs`, holding their numbers (`filled`) or zeros, with a checkpoint.
PartsModel Build(std::vector<PartSpec> specs, bool filled) {
  PartsModel model;
  Scope root = Scope::NewRootScope();
  CheckpointObjects objects;
  std::vector<std::string> initializers;
  for (const PartSpec& spec : specs) {
    Tensor initial = Expected(spec);
    if (!filled) std::fill_n(initial.data<float>(), initial.NumElements(), 0.0f);
    Variable variable = Variable::CreateFromValue(root, spec.name, ops::Const(root, initial));
    objects.variables.push_back(variable);
    initializers.push_back(variable.initializer().node()->name());
    model.reads.push_back(variable.Read(root).name());
  }
  auto checkpoint = Checkpoint::Create(root, objects);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
  if (!checkpoint.ok()) return model;
  model.checkpoint = std::move(checkpoint).value();
  model.session = MakeSession(root, 1);
  if (model.session == nullptr) return model;
  std::vector<Tensor> outputs;
  EXPECT_TRUE(model.session->Run({}, {}, initializers, &outputs).ok());
  model.specs = std::move(specs);
  return model;
}

void ExpectHoldsItsRows(PartsModel& model) {
  std::vector<Tensor> values;
  ASSERT_TRUE(model.session->Run({}, model.reads, {}, &values).ok());
  for (size_t i = 0; i < model.specs.size(); ++i) {
    SCOPED_TRACE(model.specs[i].name);
    EXPECT_TENSOR_EQ(values[i], Expected(model.specs[i]));
  }
}

// The table and its slot in parts of `rows` each.
std::vector<PartSpec> Parts(const std::vector<int64_t>& rows) {
  std::vector<PartSpec> specs;
  for (const auto& [suffix, base] : {std::pair<std::string, float>{"", 0.0f}, {"/Adagrad", 1000}}) {
    int64_t offset = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      specs.push_back({StrCat("emb/part_", i, suffix), rows[i], offset, base});
      offset += rows[i];
    }
  }
  return specs;
}

TEST(PartitionedCheckpointTest, PartsRestoreIntoAnotherNumberOfPartsAndIntoOneVariable) {
  io::testing::TempDir dir;
  PartsModel two = Build(Parts({3, 2}), /*filled=*/true);
  ASSERT_NE(two.session, nullptr);
  ASSERT_TRUE(two.checkpoint->Save(*two.session, dir.File("two"), 7, {}).ok());
  // The manifest lists the whole beside its parts.
  StatusOr<io::CheckpointManifest> manifest = io::CheckpointManifest::Read(dir.File("two"));
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  ASSERT_TRUE(manifest->partitioned.contains("emb"));
  ASSERT_TRUE(manifest->partitioned.contains("emb/Adagrad"));
  const io::ManifestPartitioned& emb = manifest->partitioned.at("emb");
  EXPECT_EQ(emb.shape, TensorShape({5, 2}));
  ASSERT_EQ(emb.parts.size(), 2u);
  EXPECT_EQ(emb.parts[1].tensor, "emb/part_1");
  EXPECT_EQ(emb.parts[1].offset, 3);

  // Three parts: part 1 takes rows from both saved parts.
  PartsModel three = Build(Parts({2, 2, 1}), /*filled=*/false);
  ASSERT_NE(three.session, nullptr);
  StatusOr<RestoredCheckpoint> restored =
      three.checkpoint->Restore(*three.session, dir.File("two"));
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->step, 7);
  ExpectHoldsItsRows(three);

  // One whole variable (a model on one device), and back from it into parts.
  PartsModel whole = Build({{"emb", 5, 0, 0.0f}, {"emb/Adagrad", 5, 0, 1000.0f}}, /*filled=*/false);
  ASSERT_NE(whole.session, nullptr);
  restored = whole.checkpoint->Restore(*whole.session, dir.File("two"));
  ASSERT_TRUE(restored.ok()) << restored.status();
  ExpectHoldsItsRows(whole);
  ASSERT_TRUE(whole.checkpoint->Save(*whole.session, dir.File("one"), 8, {}).ok());
  PartsModel again = Build(Parts({1, 4}), /*filled=*/false);
  ASSERT_NE(again.session, nullptr);
  restored = again.checkpoint->Restore(*again.session, dir.File("one"));
  ASSERT_TRUE(restored.ok()) << restored.status();
  ExpectHoldsItsRows(again);
}

TEST(PartitionedCheckpointTest, AWholeOfAnotherSizeIsRefusedNamingItAndBothShapes) {
  io::testing::TempDir dir;
  PartsModel two = Build(Parts({3, 2}), /*filled=*/true);
  ASSERT_NE(two.session, nullptr);
  ASSERT_TRUE(two.checkpoint->Save(*two.session, dir.File("two"), 7, {}).ok());
  PartsModel larger = Build(Parts({3, 3}), /*filled=*/false);
  ASSERT_NE(larger.session, nullptr);
  StatusOr<RestoredCheckpoint> restored =
      larger.checkpoint->Restore(*larger.session, dir.File("two"));
  ASSERT_FALSE(restored.ok());
  EXPECT_TRUE(IsInvalidArgument(restored.status())) << restored.status();
  EXPECT_THAT(restored.status().message(), HasSubstr("'emb"));
  EXPECT_THAT(restored.status().message(), HasSubstr("[5,2]"));
  EXPECT_THAT(restored.status().message(), HasSubstr("[6,2]"));
  // Another model altogether: neither the part nor its whole is there.
  PartsModel other = Build({{"table/part_0", 2, 0, 0.0f}, {"table/part_1", 2, 2, 0.0f}}, false);
  ASSERT_NE(other.session, nullptr);
  restored = other.checkpoint->Restore(*other.session, dir.File("two"));
  EXPECT_TRUE(IsNotFound(restored.status())) << restored.status();
  EXPECT_THAT(restored.status().message(), HasSubstr("'table'"));
}

}  // namespace
}  // namespace weft::checkpoint
