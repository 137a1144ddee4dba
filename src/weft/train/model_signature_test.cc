// Models of several named inputs and outputs (Model::Signature): a float input and an integer id
// input feeding a regression output and a classification output, trained with a loss per output
// and weights, on one device and on 2 mirrored replicas (the same losses), predicted per output,
// and the errors a user can make with a signature.
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/train/layers/core.h"
#include "weft/train/model.h"
#include "weft/train/testing/model_test_util.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;

// (x float [n, 2], id int64 [n], y float [n, 1], c float [n, 1]): y = x0 - 2 x1 + (id - 2) / 2
// and c = 1 when x0 + x1 + (id == 3) > 0.5, in batches of `batch`.
data::Dataset TwoInputsTwoOutputs(int64_t n, int64_t batch) {
  Tensor x(DataType::kFloat, TensorShape({n, 2}));
  Tensor id(DataType::kInt64, TensorShape({n}));
  Tensor y(DataType::kFloat, TensorShape({n, 1}));
  Tensor c(DataType::kFloat, TensorShape({n, 1}));
  for (int64_t i = 0; i < n; ++i) {
    const float a = static_cast<float>((i * 7) % 13) / 6.5f - 1,
                b = static_cast<float>((i * 5) % 11) / 5.5f - 1;
    const int64_t k = (i * 3) % 5;
    x.data<float>()[2 * i] = a;
    x.data<float>()[2 * i + 1] = b;
    id.data<int64_t>()[i] = k;
    y.data<float>()[i] = a - 2 * b + static_cast<float>(k - 2) / 2;
    c.data<float>()[i] = a + b + (k == 3 ? 1.0f : 0.0f) > 0.5f ? 1.0f : 0.0f;
  }
  return data::Dataset::FromTensors({x, id, y, c}).Batch(batch);
}

// The model of TwoInputsTwoOutputs' data: the id's embedding beside x, a shared hidden layer, and
// a head per output. Its layers live as long as the test.
struct TwoHeads {
  Embedding embedding{5, 4, {.embeddings_initializer = Initializer::RandomUniform(-0.05, 0.05, 3)}};
  Dense hidden{16, "relu", {.kernel_initializer = Initializer::GlorotUniform(4)}};
  Dense regression{1, "", {.kernel_initializer = Initializer::GlorotUniform(5)}};
  Dense classification{1, "", {.kernel_initializer = Initializer::GlorotUniform(6)}};

  Model::MultiCallFn Call() {
    return [this](const Scope& scope, const std::vector<Output>& inputs) {
      Output features = ops::Concat(scope, {inputs[0], embedding(scope, inputs[1])}, 1);
      Output h = hidden(scope, features);
      return std::vector<Output>{regression(scope, h), classification(scope, h)};
    };
  }
};

const Model::Signature kSignature{{"x", "id"}, {"y", "c"}};

std::map<std::string, Loss> Losses() {
  return {{"y", MeanSquaredError()}, {"c", BinaryCrossentropy(/*from_logits=*/true)}};
}

// Each epoch's logs, training TwoHeads for `epochs` under `strategy` (null: one device).
std::vector<Logs> TrainTwoHeads(const distribute::Strategy* strategy, int epochs) {
  TwoHeads heads;
  Model model(kSignature, heads.Call(), "two_heads");
  Status compiled = model.Compile(NewGradientDescentOptimizer(0.1), Losses(), {"mse"},
                                  {.strategy = strategy, .loss_weights = {{"c", 0.5}}});
  EXPECT_TRUE(compiled.ok()) << compiled;
  auto history = model.Fit(TwoInputsTwoOutputs(200, 20), {.epochs = epochs});
  EXPECT_TRUE(history.ok()) << history.status();
  return history.ok() ? history->epochs : std::vector<Logs>{};
}

TEST(ModelSignatureTest, TwoInputsAndTwoOutputsTrainOnTheWeightedSumOfTheirLosses) {
  std::vector<Logs> epochs = TrainTwoHeads(nullptr, 30);
  ASSERT_EQ(epochs.size(), 30u);
  const Logs& first = epochs.front();
  const Logs& last = epochs.back();
  for (const char* name :
       {"loss", "y_loss", "c_loss", "y_mean_squared_error", "c_mean_squared_error"}) {
    EXPECT_TRUE(last.count(name)) << name;
  }
  // The logged loss is y's plus half of c's, epoch by epoch.
  EXPECT_NEAR(last.at("loss"), last.at("y_loss") + 0.5 * last.at("c_loss"), 1e-4);
  EXPECT_NEAR(last.at("y_loss"), last.at("y_mean_squared_error"), 1e-4);
  EXPECT_LT(last.at("y_loss"), 0.2 * first.at("y_loss"));
  EXPECT_LT(last.at("c_loss"), 0.7 * first.at("c_loss"));
}

TEST(ModelSignatureTest, TwoMirroredReplicasTrainAsOneDevice) {
  std::vector<Logs> one = TrainTwoHeads(nullptr, 3);
  std::unique_ptr<distribute::Strategy> mirrored = testing::Mirrored(2);
  std::vector<Logs> two = TrainTwoHeads(mirrored.get(), 3);
  ASSERT_EQ(one.size(), 3u);
  ASSERT_EQ(two.size(), 3u);
  for (size_t e = 0; e < one.size(); ++e) {
    for (const char* name : {"loss", "y_loss", "c_loss"}) {
      EXPECT_NEAR(one[e].at(name), two[e].at(name), 1e-4) << name << " in epoch " << e;
    }
  }
}

TEST(ModelSignatureTest, PredictOutputsGivesEveryOutputAndEvaluateEachLoss) {
  TwoHeads heads;
  Model model(kSignature, heads.Call(), "two_heads");
  ASSERT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), Losses()).ok());
  ASSERT_TRUE(model.Fit(TwoInputsTwoOutputs(200, 20), {.epochs = 2}).ok());
  auto evaluated = model.Evaluate(TwoInputsTwoOutputs(60, 25));
  ASSERT_TRUE(evaluated.ok()) << evaluated.status();
  EXPECT_NEAR(evaluated->at("loss"), evaluated->at("y_loss") + evaluated->at("c_loss"), 1e-4);
  // Labels in the elements are ignored by prediction; the last batch is smaller.
  auto predicted = model.PredictOutputs(TwoInputsTwoOutputs(45, 20));
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  ASSERT_EQ(predicted->size(), 2u);
  EXPECT_EQ((*predicted)[0].shape(), TensorShape({45, 1}));
  EXPECT_EQ((*predicted)[1].shape(), TensorShape({45, 1}));
  Status single = model.Predict(TwoInputsTwoOutputs(45, 20)).status();
  EXPECT_TRUE(IsFailedPrecondition(single)) << single;
  EXPECT_THAT(single.message(), HasSubstr("PredictOutputs"));
}

TEST(ModelSignatureTest, ErrorsNameTheOutputOrInputAtFault) {
  TwoHeads heads;
  {
    Model model(kSignature, heads.Call());
    Status status = model.Compile(NewGradientDescentOptimizer(0.1),
                                  std::map<std::string, Loss>{{"y", MeanSquaredError()}});
    EXPECT_THAT(status.message(), HasSubstr("no loss for its output 'c'"));
  }
  {
    Model model(kSignature, heads.Call());
    std::map<std::string, Loss> losses = Losses();
    losses["z"] = MeanSquaredError();
    Status status = model.Compile(NewGradientDescentOptimizer(0.1), losses);
    EXPECT_THAT(status.message(), HasSubstr("no output 'z'"));
  }
  {
    Model model(kSignature, heads.Call());
    Status status = model.Compile(NewGradientDescentOptimizer(0.1), Losses(), {},
                                  {.loss_weights = {{"w", 2.0}}});
    EXPECT_THAT(status.message(), HasSubstr("loss_weights names 'w'"));
  }
  {
    Model model(Model::Signature{{"x", "x"}, {"y"}}, heads.Call());
    Status status = model.Compile(NewGradientDescentOptimizer(0.1), MeanSquaredError());
    EXPECT_THAT(status.message(), HasSubstr("names inputs 'x' twice"));
  }
  {
    // A dataset without the classification labels.
    Model model(kSignature, heads.Call(), "two_heads");
    ASSERT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), Losses()).ok());
    data::Dataset three =
        TwoInputsTwoOutputs(40, 20).Map([](data::Element element) -> StatusOr<data::Element> {
          element.pop_back();
          return element;
        });
    Status status = model.Fit(three).status();
    EXPECT_TRUE(IsInvalidArgument(status)) << status;
    EXPECT_THAT(status.message(),
                HasSubstr("4 components (input 'x', input 'id', labels of 'y', labels of 'c')"));
  }
  {
    // The call builds one output where the signature names two.
    Model model(kSignature, [&](const Scope& scope, const std::vector<Output>& inputs) {
      return std::vector<Output>{heads.regression(scope, inputs[0])};
    });
    ASSERT_TRUE(model.Compile(NewGradientDescentOptimizer(0.1), Losses()).ok());
    Status status = model.Fit(TwoInputsTwoOutputs(40, 20)).status();
    EXPECT_THAT(status.message(), HasSubstr("built 1 outputs, but its signature names 2 (y, c)"));
  }
}

}  // namespace
}  // namespace weft::train
