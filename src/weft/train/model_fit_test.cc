// What Fit, Evaluate and Summary tell a user: which epoch, step and batch failed; a binary label
// outside [0, 1] and dataset components the model would ignore are errors; History numbers a
// resumed run's epochs from the one it resumed in; Summary's columns fit the longest entry.
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/io/testing/io_test_util.h"
#include "weft/train/callbacks.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"
#include "weft/train/testing/model_test_util.h"

namespace weft::train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using train::testing::Regression;

// 16 examples of 2 features with binary labels [16, 1]; example `bad` (if any) labelled 2.
data::Dataset Binary(int64_t bad = -1) {
  Tensor x(DataType::kFloat, TensorShape({16, 2}));
  Tensor y(DataType::kFloat, TensorShape({16, 1}));
  for (int64_t i = 0; i < 16; ++i) {
    x.data<float>()[2 * i] = static_cast<float>(i % 4) - 1.5f;
    x.data<float>()[2 * i + 1] = static_cast<float>(i % 3) - 1.0f;
    y.data<float>()[i] = i == bad ? 2.0f : static_cast<float>(i % 4 >= 2);
  }
  return data::Dataset::FromTensors({x, y}).Batch(4);
}

TEST(ModelFitTest, ABinaryLabelOutsideZeroToOneIsRefusedNamingItAndTheStep) {
  Sequential model(Dense(1));
  ASSERT_TRUE(
      model.Compile(NewGradientDescentOptimizer(0.1), BinaryCrossentropy(true), {"accuracy"}).ok());
  ASSERT_TRUE(model.Fit(Binary()).ok());
  // Example 6 is in batch 2: the second step of this Fit, the sixth of the model's life.
  Status fit = model.Fit(Binary(/*bad=*/6)).status();
  ASSERT_FALSE(fit.ok());
  EXPECT_THAT(fit.message(), HasSubstr("Fit at epoch 1, step 6 (batch 2)"));
  EXPECT_THAT(fit.message(), HasSubstr("binary_crossentropy: label 2 (element 2 of the batch"));
  Status evaluate = model.Evaluate(Binary(/*bad=*/13)).status();
  ASSERT_FALSE(evaluate.ok());
  EXPECT_THAT(evaluate.message(), HasSubstr("Evaluate at batch 4"));
  EXPECT_THAT(evaluate.message(), HasSubstr("label 2"));
}

// An id out of range fails the step in a kernel; the error says where in training it was, also
// when several steps run at once.
TEST(ModelFitTest, AFailingStepNamesItsEpochStepAndBatch) {
  for (int steps_per_execution : {1, 2}) {
    SCOPED_TRACE(steps_per_execution);
    Tensor ids(DataType::kInt64, TensorShape({16, 1}));
    Tensor y(DataType::kFloat, TensorShape({16, 1}));
    for (int64_t i = 0; i < 16; ++i) {
      ids.data<int64_t>()[i] = i == 9 ? 12 : i % 10;  // example 9: batch 3 of 4 examples
      y.data<float>()[i] = 1;
    }
    Sequential model(Embedding(10, 4), Flatten(), Dense(1));
    ASSERT_TRUE(model
                    .Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError(), {},
                             {.steps_per_execution = steps_per_execution})
                    .ok());
    Status fit = model.Fit(data::Dataset::FromTensors({ids, y}).Batch(4)).status();
    ASSERT_FALSE(fit.ok());
    EXPECT_THAT(fit.message(),
                HasSubstr(steps_per_execution == 1 ? "Fit at epoch 1, step 3 (batch 3)"
                                                   : "Fit at epoch 1, steps 3-4 (batches 3-4)"));
    EXPECT_THAT(fit.message(), HasSubstr("12"));
  }
}

TEST(ModelFitTest, DatasetComponentsTheModelWouldIgnoreAreAnError) {
  Tensor x(DataType::kFloat, TensorShape({8, 2}));
  Tensor y(DataType::kFloat, TensorShape({8, 1}));
  Tensor weights(DataType::kFloat, TensorShape({8}));
  Sequential model(Dense(1));
  ASSERT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
  const data::Dataset three = data::Dataset::FromTensors({x, y, weights}).Batch(4);
  Status fit = model.Fit(three).status();
  ASSERT_FALSE(fit.ok());
  EXPECT_THAT(fit.message(),
              HasSubstr("takes dataset elements of 2 components (inputs, labels), but the "
                        "dataset's have 3"));
  ASSERT_TRUE(model.Fit(data::Dataset::FromTensors({x, y}).Batch(4)).ok());
  EXPECT_THAT(model.Evaluate(three).status().message(), HasSubstr("the dataset's have 3"));
  EXPECT_THAT(model.Predict(three).status().message(), HasSubstr("the dataset's have 3"));
  // Predict takes an Evaluate dataset (inputs and labels) and leaves the labels.
  EXPECT_TRUE(model.Predict(data::Dataset::FromTensors({x, y}).Batch(4)).ok());
}

TEST(ModelFitTest, HistoryNumbersAResumedFitsEpochsFromTheResumedOne) {
  io::testing::TempDir directory;
  auto train = [&](int epochs) {
    Sequential model(Dense(1, "", {.name = "linear"}));
    EXPECT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
    ModelCheckpoint checkpoint(directory.path());
    auto history = model.Fit(Regression(32, 8), {.epochs = epochs, .callbacks = {&checkpoint}});
    EXPECT_TRUE(history.ok()) << history.status();
    return history.ok() ? *history : History();
  };
  History first = train(1);
  EXPECT_THAT(first.epoch, ElementsAre(0));
  History resumed = train(3);
  EXPECT_EQ(resumed.epochs.size(), 2u);
  EXPECT_THAT(resumed.epoch, ElementsAre(1, 2));
}

TEST(ModelFitTest, SummaryColumnsFitTheLongestEntry) {
  const std::string long_name(48, 'x');
  Sequential model(Dense(4, "relu", {.name = "short"}), Dense(10, "", {.name = long_name}));
  ASSERT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError()).ok());
  ASSERT_TRUE(model.Build({PartialShape({2}), DataType::kFloat}).ok());
  auto summary = model.Summary();
  ASSERT_TRUE(summary.ok()) << summary.status();
  // Every row's shape starts in one column: the header's "Output Shape".
  std::istringstream lines(*summary);
  std::string line;
  size_t shape_column = std::string::npos;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.find("Output Shape") != std::string::npos) shape_column = line.find("Output Shape");
    const size_t shape = line.find("(None, ");
    if (shape == std::string::npos) continue;
    ++rows;
    EXPECT_EQ(shape, shape_column) << line;
    EXPECT_THAT(line.substr(shape_column - 1, 1), " ") << line;
  }
  EXPECT_EQ(rows, 2);
  EXPECT_THAT(*summary, HasSubstr(long_name + " (Dense)"));
}

}  // namespace
}  // namespace weft::train
