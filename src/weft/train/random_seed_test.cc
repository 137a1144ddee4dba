// The global random seed: the same seed trains the same way (two models in one process, and a
// second process), a model's own seed wins over the global one, no seed stays random, and a
// variable's seed follows its name, not the layers built before it.
#include "weft/train/random_seed.h"

#include <cstdio>
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/testing/child_process.h"
#include "weft/train/layers/core.h"
#include "weft/train/model.h"
#include "weft/train/testing/model_test_util.h"

namespace weft::train {
namespace {

using train::testing::Classes;

// Clears the global seed when the test ends, whatever it set.
class RandomSeedTest : public ::testing::Test {
 protected:
  void TearDown() override { ClearRandomSeed(); }
};

// Each epoch's loss of a classifier with default (unseeded) initializers and dropout, trained
// on fixed data; `seed` is CompileOptions::seed.
std::vector<double> Losses(std::optional<int64_t> seed = std::nullopt) {
  Sequential model(Dense(32, "relu"), Dropout(0.25), Dense(10));
  Status compiled = model.Compile(NewMomentumOptimizer(0.05, 0.9),
                                  SparseCategoricalCrossentropy(true), {}, {.seed = seed});
  EXPECT_TRUE(compiled.ok()) << compiled;
  auto history = model.Fit(Classes(128, 32), {.epochs = 2});
  EXPECT_TRUE(history.ok()) << history.status();
  std::vector<double> losses;
  if (!history.ok()) return losses;
  for (const Logs& logs : history->epochs) losses.push_back(logs.at("loss"));
  return losses;
}

TEST_F(RandomSeedTest, TheSameGlobalSeedGivesTheSameLossesTwice) {
  SetRandomSeed(1234);
  std::vector<double> first = Losses();
  std::vector<double> second = Losses();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first, second);
  SetRandomSeed(99);
  EXPECT_NE(Losses(), first);
}

TEST_F(RandomSeedTest, WithoutASeedEveryRunDrawsAfresh) {
  ClearRandomSeed();
  EXPECT_FALSE(GlobalRandomSeed().has_value());
  EXPECT_NE(Losses(), Losses());
}

TEST_F(RandomSeedTest, AModelsOwnSeedWinsOverTheGlobalOne) {
  std::vector<double> own = Losses(/*seed=*/5);
  SetRandomSeed(6);
  EXPECT_EQ(Losses(/*seed=*/5), own);
  EXPECT_NE(Losses(), own);
  SetRandomSeed(5);
  EXPECT_EQ(Losses(), own);  // the model's seed and the global seed mean the same
}

// The value of the model's first variable (its first layer's kernel).
std::vector<float> FirstKernel(Model& model) {
  std::string read;
  Status added = model.AddToGraph([&](const Scope& root) {
    read = model.variables()[0].Read(root.NewSubScope("test_read")).name();
    return Status::OK();
  });
  EXPECT_TRUE(added.ok()) << added;
  std::vector<Tensor> values;
  Status ran = model.session()->Run({}, {read}, {}, &values);
  EXPECT_TRUE(ran.ok()) << ran;
  if (!ran.ok()) return {};
  return std::vector<float>(values[0].data<float>(),
                            values[0].data<float>() + values[0].NumElements());
}

// Adding a layer after (or an unrelated model before) leaves a layer's initial values alone: its
// seed comes from its variable's name, not from a count of what was built before it.
TEST_F(RandomSeedTest, AVariablesValuesFollowItsNameNotWhatWasBuiltBefore) {
  SetRandomSeed(42);
  Sequential small(Dense(8, "relu"), Dense(3));
  Sequential larger(Dense(8, "relu"), Dense(16, "relu"), Dense(3));
  for (Model* model : {static_cast<Model*>(&small), static_cast<Model*>(&larger)}) {
    ASSERT_TRUE(
        model->Compile(NewGradientDescentOptimizer(0.1), SparseCategoricalCrossentropy(true)).ok());
    ASSERT_TRUE(model->Build({PartialShape({16}), DataType::kFloat}).ok());
  }
  std::vector<float> in_small = FirstKernel(small);
  ASSERT_EQ(in_small.size(), 16u * 8u);
  EXPECT_EQ(FirstKernel(larger), in_small);
}

TEST(DeriveSeedTest, IsStableNonzeroAndDependsOnSeedAndName) {
  EXPECT_EQ(DeriveSeed(1, "dense/kernel"), DeriveSeed(1, "dense/kernel"));
  EXPECT_NE(DeriveSeed(1, "dense/kernel"), DeriveSeed(2, "dense/kernel"));
  EXPECT_NE(DeriveSeed(1, "dense/kernel"), DeriveSeed(1, "dense_1/kernel"));
  EXPECT_GT(DeriveSeed(0, ""), 0);
}

// Run alone by SameSeedInAnotherProcess: prints this process's losses for seed 2024.
TEST_F(RandomSeedTest, PrintsTheLossesOfSeed2024) {
  SetRandomSeed(2024);
  std::vector<double> losses = Losses();
  ASSERT_EQ(losses.size(), 2u);
  std::printf("losses %.9g %.9g\n", losses[0], losses[1]);
}

TEST_F(RandomSeedTest, TheSameSeedGivesTheSameLossesInAnotherProcess) {
  SetRandomSeed(2024);
  std::vector<double> here = Losses();
  ASSERT_EQ(here.size(), 2u);
  auto child = weft::testing::ChildProcess::Start(
      {"/proc/self/exe", "--gtest_filter=RandomSeedTest.PrintsTheLossesOfSeed2024"});
  ASSERT_TRUE(child.ok()) << child.status();
  auto exit_code = (*child)->WaitForExit(120'000);
  ASSERT_TRUE(exit_code.ok()) << exit_code.status();
  ASSERT_EQ(*exit_code, 0) << (*child)->output();
  const std::string& output = (*child)->output();
  const size_t at = output.find("losses ");
  ASSERT_NE(at, std::string::npos) << output;
  double first = 0, second = 0;
  ASSERT_EQ(std::sscanf(output.c_str() + at, "losses %lf %lf", &first, &second), 2) << output;
  // Printed to 9 significant digits.
  EXPECT_NEAR(first, here[0], 1e-7 * std::abs(here[0]));
  EXPECT_NEAR(second, here[1], 1e-7 * std::abs(here[1]));
}

}  // namespace
}  // namespace weft::train
