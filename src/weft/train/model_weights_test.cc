// SaveWeights and LoadWeights (a fresh model predicts as the trained one without any training
// data, on one device or two replicas; errors name the variable and the file), and automatic
// layer names counted per model, so that a second model of the same architecture in one process
// restores the first's ModelCheckpoint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/io/testing/io_test_util.h"
#include "weft/train/callbacks.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"
#include "weft/train/testing/model_test_util.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;
using train::testing::Classes;
using train::testing::Mirrored;

// The classifier every test here builds: automatic names, default initializers.
struct Classifier {
  Sequential model{Dense(32, "relu"), Dense(10)};
};

std::vector<float> Values(const Tensor& tensor) {
  return std::vector<float>(tensor.data<float>(), tensor.data<float>() + tensor.NumElements());
}

// The predictions of a trained classifier for Classes(8, 8).
std::vector<float> TrainAndPredict(Model& model, std::vector<Callback*> callbacks = {}) {
  Status compiled =
      model.Compile(NewMomentumOptimizer(0.05, 0.9), SparseCategoricalCrossentropy(true));
  EXPECT_TRUE(compiled.ok()) << compiled;
  auto history = model.Fit(Classes(128, 32), {.epochs = 2, .callbacks = std::move(callbacks)});
  EXPECT_TRUE(history.ok()) << history.status();
  auto predicted = model.Predict(Classes(8, 8));
  EXPECT_TRUE(predicted.ok()) << predicted.status();
  return predicted.ok() ? Values(*predicted) : std::vector<float>();
}

TEST(ModelWeightsTest, AFreshModelLoadsSavedWeightsAndPredictsWithoutData) {
  io::testing::TempDir directory;
  const std::string path = directory.path() + "/weights";
  Classifier trained;
  std::vector<float> expected = TrainAndPredict(trained.model);
  ASSERT_EQ(expected.size(), 80u);
  ASSERT_TRUE(trained.model.SaveWeights(path).ok());

  auto mirrored = Mirrored(2);
  for (const distribute::Strategy* strategy :
       {static_cast<distribute::Strategy*>(nullptr),
        static_cast<distribute::Strategy*>(mirrored.get())}) {
    SCOPED_TRACE(strategy == nullptr ? "one device" : "two mirrored replicas");
    // Compile, LoadWeights, Predict: no dataset of labels, no Fit.
    Classifier fresh;
    ASSERT_TRUE(fresh.model
                    .Compile(NewGradientDescentOptimizer(0.1), SparseCategoricalCrossentropy(true),
                             {}, {.strategy = strategy})
                    .ok());
    Status loaded = fresh.model.LoadWeights(path);
    ASSERT_TRUE(loaded.ok()) << loaded;
    auto predicted = fresh.model.Predict(Classes(8, 8));
    ASSERT_TRUE(predicted.ok()) << predicted.status();
    EXPECT_EQ(Values(*predicted), expected);
  }
}

TEST(ModelWeightsTest, ABuiltModelLoadsAtOnceAndACheckpointOfFitLoadsToo) {
  io::testing::TempDir directory;
  ModelCheckpoint saving(directory.path());
  Classifier trained;
  std::vector<float> expected = TrainAndPredict(trained.model, {&saving});
  ASSERT_EQ(saving.saves(), 2);

  Classifier fresh;
  ASSERT_TRUE(
      fresh.model.Compile(NewGradientDescentOptimizer(0.1), SparseCategoricalCrossentropy(true))
          .ok());
  ASSERT_TRUE(fresh.model.Build({PartialShape({16}), DataType::kFloat}).ok());
  // A training checkpoint also holds the optimizer's slots and the metrics: those are ignored.
  Status loaded = fresh.model.LoadWeights(directory.path() + "/ckpt-8");
  ASSERT_TRUE(loaded.ok()) << loaded;
  auto predicted = fresh.model.Predict(Classes(8, 8));
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(Values(*predicted), expected);
}

TEST(ModelWeightsTest, ErrorsNameTheVariableAndTheFile) {
  io::testing::TempDir directory;
  const std::string path = directory.path() + "/weights";
  Classifier trained;
  EXPECT_THAT(trained.model.SaveWeights(path).message(), HasSubstr("is not built yet"));
  TrainAndPredict(trained.model);
  ASSERT_TRUE(trained.model.SaveWeights(path).ok());

  Classifier missing;
  Status no_file = missing.model.LoadWeights(directory.path() + "/nothing-here");
  ASSERT_FALSE(no_file.ok());
  EXPECT_THAT(no_file.message(), HasSubstr(directory.path() + "/nothing-here"));

  // Another width: the first kernel's shape differs.
  Sequential wider(Dense(64, "relu"), Dense(10));
  ASSERT_TRUE(
      wider.Compile(NewGradientDescentOptimizer(0.1), SparseCategoricalCrossentropy(true)).ok());
  ASSERT_TRUE(wider.LoadWeights(path).ok());  // checked when built
  Status mismatched = wider.Predict(Classes(8, 8)).status();
  ASSERT_FALSE(mismatched.ok());
  EXPECT_THAT(mismatched.message(), HasSubstr("tensor 'dense/kernel'"));
  EXPECT_THAT(mismatched.message(), HasSubstr(path));
  EXPECT_THAT(mismatched.message(), HasSubstr("[16,32]"));
  // The load stays pending: a later call fails the same way rather than predict from initial
  // values.
  EXPECT_FALSE(wider.Predict(Classes(8, 8)).ok());

  // One layer more: its weights are not in the file.
  Sequential deeper(Dense(32, "relu"), Dense(10), Dense(10));
  ASSERT_TRUE(
      deeper.Compile(NewGradientDescentOptimizer(0.1), SparseCategoricalCrossentropy(true)).ok());
  ASSERT_TRUE(deeper.Build({PartialShape({16}), DataType::kFloat}).ok());
  Status absent = deeper.LoadWeights(path);
  ASSERT_FALSE(absent.ok());
  EXPECT_THAT(absent.message(), HasSubstr("no tensor 'dense_2/kernel'"));
  EXPECT_THAT(absent.message(), HasSubstr(path));
}

// Before automatic names were counted per model, the second model's layers were "dense_2" and
// "dense_3" and could not restore the first's "dense" and "dense_1".
TEST(ModelWeightsTest, ASecondModelOfTheSameArchitectureRestoresTheFirstsCheckpoint) {
  io::testing::TempDir directory;
  ModelCheckpoint first_checkpoint(directory.path());
  Classifier first;
  std::vector<float> expected = TrainAndPredict(first.model, {&first_checkpoint});
  ASSERT_EQ(first.model.variables()[0].name(), "dense/kernel");

  ModelCheckpoint second_checkpoint(directory.path());
  Classifier second;
  std::vector<float> restored = TrainAndPredict(second.model, {&second_checkpoint});
  EXPECT_EQ(second_checkpoint.resumed_from_step(), 8);
  EXPECT_EQ(second.model.variables()[0].name(), "dense/kernel");
  EXPECT_EQ(restored, expected);
}

}  // namespace
}  // namespace weft::train
