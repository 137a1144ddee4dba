// Each layer against a plain computation on the host, in a one-device session; errors name the
// layer.
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/distribute/testing/session_test_util.h"
#include "weft/train/layers/convolutional.h"
#include "weft/train/layers/core.h"
#include "weft/train/layers/normalization.h"

namespace weft::train {
namespace {

using distribute::testing::Fetch;
using distribute::testing::MakeSession;
using ::testing::HasSubstr;

std::vector<float> Values(const Tensor& tensor) {
  return std::vector<float>(tensor.data<float>(), tensor.data<float>() + tensor.NumElements());
}

// Deterministic inputs in [-1, 1).
Tensor Input(const TensorShape& shape, int salt = 0) {
  Tensor tensor(DataType::kFloat, shape);
  float* data = tensor.data<float>();
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    data[i] = static_cast<float>(((i * 37 + salt * 11) % 23) / 11.5 - 1.0);
  }
  return tensor;
}

// The layer's output for `input` (a Const) and its variables' values, in one session.
struct Ran {
  std::vector<float> output;
  std::vector<Tensor> weights;
  TensorShape output_shape;
  int64_t params = 0;  // CountParams() while the graph lived
};

Ran RunLayer(Layer& layer, const Tensor& input, bool training = false) {
  Scope root = Scope::NewRootScope();
  Output output = layer(root, ops::Const(root, input), training);
  EXPECT_TRUE(root.ok()) << root.status();
  Ran ran;
  if (!root.ok()) return ran;
  std::vector<Output> inits;
  std::vector<Output> fetches = {output};
  for (const Variable& variable : layer.variables()) {
    inits.push_back(variable.initializer());
    fetches.push_back(variable.Read(root));
  }
  auto session = MakeSession(root, 1);
  if (session == nullptr) return ran;
  Fetch(*session, {}, inits);
  std::vector<Tensor> values = Fetch(*session, fetches);
  if (values.size() != fetches.size()) return ran;
  ran.output = Values(values[0]);
  ran.output_shape = values[0].shape();
  ran.params = layer.CountParams();
  ran.weights.assign(values.begin() + 1, values.end());
  return ran;
}

void ExpectNear(const std::vector<float>& actual, const std::vector<float>& expected,
                float tolerance = 1e-5f) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
  }
}

TEST(DenseTest, ComputesReluOfInputTimesKernelPlusBias) {
  Dense dense(3, "relu", {.bias_initializer = Initializer::Constant(0.25)});
  Tensor x = Input(TensorShape({4, 5}));
  Ran ran = RunLayer(dense, x);
  ASSERT_EQ(ran.weights.size(), 2u);
  EXPECT_EQ(ran.weights[0].shape(), TensorShape({5, 3}));
  EXPECT_EQ(dense.name().substr(0, 5), "dense");
  std::vector<float> expected;
  const float* w = ran.weights[0].data<float>();
  for (int b = 0; b < 4; ++b) {
    for (int j = 0; j < 3; ++j) {
      float sum = 0.25f;
      for (int i = 0; i < 5; ++i) sum += x.data<float>()[b * 5 + i] * w[i * 3 + j];
      expected.push_back(std::max(sum, 0.0f));
    }
  }
  ExpectNear(ran.output, expected);
  EXPECT_EQ(ran.params, 5 * 3 + 3);
}

TEST(DenseTest, AppliesToTheLastDimensionOfHigherRanks) {
  Dense dense(2, "", {.use_bias = false});
  Tensor x = Input(TensorShape({2, 3, 4}));
  Ran ran = RunLayer(dense, x);
  EXPECT_EQ(ran.output_shape, TensorShape({2, 3, 2}));
  const float* w = ran.weights[0].data<float>();
  for (int row = 0; row < 6; ++row) {
    for (int j = 0; j < 2; ++j) {
      float sum = 0;
      for (int i = 0; i < 4; ++i) sum += x.data<float>()[row * 4 + i] * w[i * 2 + j];
      EXPECT_NEAR(ran.output[row * 2 + j], sum, 1e-5f);
    }
  }
}

TEST(DenseTest, BadInputsAndArgumentsNameTheLayer) {
  Scope root = Scope::NewRootScope();
  Dense dense(3, "", {.name = "head"});
  dense(root, ops::Const(root, Tensor::FromVector<float>({1, 2})));
  EXPECT_THAT(root.status().message(), HasSubstr("layer 'head' (Dense)"));
  EXPECT_THAT(root.status().message(), HasSubstr("[batch, ..., features]"));

  Scope other = Scope::NewRootScope();
  Dense bad_activation(3, "rellu");
  bad_activation(other, ops::Const(other, Input(TensorShape({2, 2}))));
  EXPECT_THAT(other.status().message(), HasSubstr("unknown activation 'rellu'"));

  Scope third = Scope::NewRootScope();
  Dense no_units(0);
  no_units(third, ops::Const(third, Input(TensorShape({2, 2}))));
  EXPECT_THAT(third.status().message(), HasSubstr("units must be positive"));
}

TEST(LayerTest, ACallInTheSameGraphReusesTheVariables) {
  Scope root = Scope::NewRootScope();
  Dense dense(2);
  Output x = ops::Const(root, Input(TensorShape({1, 3})));
  dense(root, x);
  dense(root, x);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(dense.variables().size(), 2u);
  EXPECT_EQ(dense.VariablesIn(root.graph(), 0, false).size(), 2u);
  EXPECT_EQ(dense.variables()[0].name(), dense.name() + "/kernel");
  // Another graph gets variables of its own.
  Scope other = Scope::NewRootScope();
  dense(other, ops::Const(other, Input(TensorShape({1, 3}))));
  EXPECT_EQ(dense.VariablesIn(other.graph(), 0, false).size(), 2u);
  EXPECT_EQ(dense.variables()[0].handle().node(),
            dense.VariablesIn(root.graph(), 0, false)[0].handle().node());
}

// A layer keeps weights per graph; once a graph is gone its weights are, too, and a new graph
// (perhaps at the same address) gets weights of its own, built for its input.
TEST(LayerTest, AGraphThatIsGoneLeavesNoWeightsBehind) {
  Dense dense(2);
  {
    Scope first = Scope::NewRootScope();
    dense(first, ops::Const(first, Input(TensorShape({1, 3}))));
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_EQ(dense.variables().size(), 2u);
  }
  EXPECT_TRUE(dense.variables().empty());
  Scope second = Scope::NewRootScope();
  dense(second, ops::Const(second, Input(TensorShape({1, 4}))));
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(dense.variables().size(), 2u);
  EXPECT_EQ(dense.variables()[0].shape(), TensorShape({4, 2}));
}

TEST(AutomaticNamesTest, AreTakenOnTheFirstCallUniqueInTheProcessOutsideAModel) {
  Flatten a, b;
  Dropout c(0.5);
  EXPECT_EQ(a.name(), "flatten");  // the type's default until the first call
  Scope root = Scope::NewRootScope();
  Output x = ops::Const(root, Input(TensorShape({2, 3})));
  a(root, x);
  b(root, x);
  c(root, x);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_NE(a.name(), b.name());
  EXPECT_EQ(a.name().substr(0, 7), "flatten");
  EXPECT_EQ(c.name().substr(0, 7), "dropout");
}

// Inside a model (a LayerCallContext with the model's LayerNames) names count per model, in the
// order of the first calls, skipping names given explicitly.
TEST(AutomaticNamesTest, AreCountedPerModelInCallOrder) {
  for (int model = 0; model < 2; ++model) {
    SCOPED_TRACE(model == 0 ? "first model" : "second model of the same architecture");
    LayerNames names;
    Dense named(2, "", {.name = "dense_1"});
    Dense first(2), second(2);
    Flatten flatten;
    Scope root = Scope::NewRootScope();
    {
      LayerCallContext context(/*training=*/false, {.names = &names});
      Output x = ops::Const(root, Input(TensorShape({2, 3})));
      second(root, named(root, first(root, flatten(root, x))));
    }
    ASSERT_TRUE(root.ok()) << root.status();
    EXPECT_EQ(flatten.name(), "flatten");
    EXPECT_EQ(first.name(), "dense");
    EXPECT_EQ(second.name(), "dense_2");
    EXPECT_EQ(second.variables()[0].name(), "dense_2/kernel");
  }
}

TEST(FlattenTest, KeepsTheBatchAndMultipliesTheRest) {
  Flatten flatten;
  Tensor x = Input(TensorShape({2, 3, 4}));
  Ran ran = RunLayer(flatten, x);
  EXPECT_EQ(ran.output_shape, TensorShape({2, 12}));
  ExpectNear(ran.output, Values(x), 0);
}

TEST(ReshapeTest, KeepsTheBatchAndRefusesADimensionBelowOne) {
  Reshape reshape({2, 3});
  Tensor x = Input(TensorShape({2, 6}));
  Ran ran = RunLayer(reshape, x);
  EXPECT_EQ(ran.output_shape, TensorShape({2, 2, 3}));
  ExpectNear(ran.output, Values(x), 0);
  Reshape bad({0, 3});
  Scope root = Scope::NewRootScope();
  bad(root, ops::Const(root, x));
  EXPECT_THAT(root.status().message(), HasSubstr("must be positive, got 0"));
}

TEST(ActivationTest, AppliesTheFunction) {
  Activation tanh_layer("tanh");
  Tensor x = Input(TensorShape({3, 2}));
  Ran ran = RunLayer(tanh_layer, x);
  std::vector<float> expected;
  for (float v : Values(x)) expected.push_back(std::tanh(v));
  ExpectNear(ran.output, expected);
}

TEST(DropoutTest, IsTheIdentityInInferenceAndScalesKeptValuesInTraining) {
  Dropout dropout(0.25, /*seed=*/7);
  Tensor x(DataType::kFloat, TensorShape({100, 40}));
  for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = 1.0f + (i % 3);
  ExpectNear(RunLayer(dropout, x, /*training=*/false).output, Values(x), 0);
  Ran trained = RunLayer(dropout, x, /*training=*/true);
  int64_t dropped = 0;
  for (size_t i = 0; i < trained.output.size(); ++i) {
    if (trained.output[i] == 0) {
      ++dropped;
    } else {
      EXPECT_NEAR(trained.output[i], x.data<float>()[i] / 0.75f, 1e-5f);
    }
  }
  EXPECT_NEAR(static_cast<double>(dropped) / x.NumElements(), 0.25, 0.03);
  // A seed repeats the masks in a new session.
  EXPECT_EQ(RunLayer(dropout, x, /*training=*/true).output, trained.output);
}

TEST(DropoutTest, ARateOutsideTheRangeIsAnError) {
  Scope root = Scope::NewRootScope();
  Dropout dropout(1.0);
  dropout(root, ops::Const(root, Input(TensorShape({2, 2}))), true);
  EXPECT_THAT(root.status().message(), HasSubstr("rate must be in [0, 1)"));
}

// Plain 2-D convolution over NHWC with the given padding ("valid" or "same", stride 1).
std::vector<float> Convolve(const Tensor& x, const Tensor& kernel, bool same) {
  const int64_t n = x.dim_size(0), h = x.dim_size(1), w = x.dim_size(2), c = x.dim_size(3);
  const int64_t k = kernel.dim_size(0), f = kernel.dim_size(3);
  const int64_t pad = same ? (k - 1) / 2 : 0;
  const int64_t oh = same ? h : h - k + 1, ow = same ? w : w - k + 1;
  std::vector<float> out;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        for (int64_t o = 0; o < f; ++o) {
          float sum = 0;
          for (int64_t di = 0; di < k; ++di) {
            for (int64_t dj = 0; dj < k; ++dj) {
              const int64_t y = i + di - pad, xx = j + dj - pad;
              if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
              for (int64_t ci = 0; ci < c; ++ci) {
                sum += x.data<float>()[((b * h + y) * w + xx) * c + ci] *
                       kernel.data<float>()[((di * k + dj) * c + ci) * f + o];
              }
            }
          }
          out.push_back(sum);
        }
      }
    }
  }
  return out;
}

TEST(Conv2DTest, MatchesAPlainConvolutionWithValidAndSamePadding) {
  Tensor x = Input(TensorShape({2, 5, 5, 3}));
  for (bool same : {false, true}) {
    Conv2D conv(4, 3, "", {.padding = same ? "same" : "valid", .use_bias = false});
    Ran ran = RunLayer(conv, x);
    EXPECT_EQ(ran.output_shape, same ? TensorShape({2, 5, 5, 4}) : TensorShape({2, 3, 3, 4}));
    ExpectNear(ran.output, Convolve(x, ran.weights[0], same), 1e-4f);
  }
}

TEST(Conv2DTest, NeedsImages) {
  Scope root = Scope::NewRootScope();
  Conv2D conv(4, 3, "", {.name = "conv"});
  conv(root, ops::Const(root, Input(TensorShape({2, 5}))));
  EXPECT_THAT(root.status().message(), HasSubstr("layer 'conv' (Conv2D): needs NHWC images"));
  Scope other = Scope::NewRootScope();
  Conv2D bad_padding(4, 3, "", {.padding = "full"});
  bad_padding(other, ops::Const(other, Input(TensorShape({1, 5, 5, 1}))));
  EXPECT_THAT(other.status().message(), HasSubstr("unknown padding 'full'"));
}

TEST(PoolingTest, MaxAndAverageOfEachWindow) {
  Tensor x = Input(TensorShape({1, 4, 4, 2}));
  MaxPooling2D max_pool(2);
  AveragePooling2D average_pool(2);
  Ran max_ran = RunLayer(max_pool, x);
  Ran average_ran = RunLayer(average_pool, x);
  EXPECT_EQ(max_ran.output_shape, TensorShape({1, 2, 2, 2}));
  std::vector<float> expected_max, expected_average;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int c = 0; c < 2; ++c) {
        float best = -1e9f, sum = 0;
        for (int di = 0; di < 2; ++di) {
          for (int dj = 0; dj < 2; ++dj) {
            float v = x.data<float>()[((2 * i + di) * 4 + 2 * j + dj) * 2 + c];
            best = std::max(best, v);
            sum += v;
          }
        }
        expected_max.push_back(best);
        expected_average.push_back(sum / 4);
      }
    }
  }
  ExpectNear(max_ran.output, expected_max);
  ExpectNear(average_ran.output, expected_average);
}

TEST(BatchNormalizationTest, NormalizesWithTheBatchInTrainingAndMovesItsStatistics) {
  BatchNormalization norm({.momentum = 0.9, .epsilon = 1e-3});
  Tensor x = Input(TensorShape({6, 3}));
  Scope root = Scope::NewRootScope();
  LayerCallContext context(/*training=*/true);
  Output y = norm(root, ops::Const(root, x));
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(context.updates().size(), 2u);
  ASSERT_EQ(norm.variables().size(), 4u);
  EXPECT_EQ(norm.trainable_variables().size(), 2u);
  EXPECT_EQ(norm.non_trainable_variables()[0].name(), norm.name() + "/moving_mean");
  std::vector<Output> inits;
  for (const Variable& variable : norm.variables()) inits.push_back(variable.initializer());
  const std::vector<Output> reads = {norm.non_trainable_variables()[0].Read(root),
                                     norm.non_trainable_variables()[1].Read(root)};
  auto session = MakeSession(root, 1);
  ASSERT_NE(session, nullptr);
  Fetch(*session, {}, inits);
  std::vector<Tensor> outputs = Fetch(*session, {y}, context.updates());
  ASSERT_EQ(outputs.size(), 1u);
  std::vector<float> out = Values(outputs[0]);
  std::vector<Tensor> moving = Fetch(*session, reads);
  ASSERT_EQ(moving.size(), 2u);
  for (int c = 0; c < 3; ++c) {
    double mean = 0, variance = 0;
    for (int b = 0; b < 6; ++b) mean += x.data<float>()[b * 3 + c] / 6.0;
    for (int b = 0; b < 6; ++b) variance += std::pow(x.data<float>()[b * 3 + c] - mean, 2) / 6.0;
    for (int b = 0; b < 6; ++b) {
      EXPECT_NEAR(out[b * 3 + c], (x.data<float>()[b * 3 + c] - mean) / std::sqrt(variance + 1e-3),
                  1e-4);
    }
    EXPECT_NEAR(moving[0].data<float>()[c], 0.1 * mean, 1e-5);
    EXPECT_NEAR(moving[1].data<float>()[c], 0.9 + 0.1 * variance, 1e-5);
  }
}

TEST(BatchNormalizationTest, InferenceUsesTheMovingStatistics) {
  BatchNormalization norm({.center = false});
  Tensor x = Input(TensorShape({2, 2, 2, 3}));
  Ran ran = RunLayer(norm, x, /*training=*/false);
  ASSERT_EQ(ran.weights.size(), 3u);  // gamma, moving mean, moving variance
  std::vector<float> expected;
  for (float v : Values(x)) expected.push_back(v / std::sqrt(1.0f + 1e-3f));
  ExpectNear(ran.output, expected);
}

TEST(LayerNormalizationTest, NormalizesEachExample) {
  LayerNormalization norm;
  Tensor x = Input(TensorShape({3, 4}));
  Ran ran = RunLayer(norm, x);
  for (int b = 0; b < 3; ++b) {
    double mean = 0, variance = 0;
    for (int i = 0; i < 4; ++i) mean += x.data<float>()[b * 4 + i] / 4.0;
    for (int i = 0; i < 4; ++i) variance += std::pow(x.data<float>()[b * 4 + i] - mean, 2) / 4.0;
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(ran.output[b * 4 + i],
                  (x.data<float>()[b * 4 + i] - mean) / std::sqrt(variance + 1e-3), 1e-4);
    }
  }
}

TEST(EmbeddingTest, LooksUpRowsAndRefusesIdsOutOfRange) {
  Embedding embedding(5, 3);
  Tensor ids = Tensor::FromVector<int64_t>({4, 0, 2, 4}, TensorShape({2, 2}));
  Scope root = Scope::NewRootScope();
  Output rows = embedding(root, ops::Const(root, ids));
  ASSERT_TRUE(root.ok()) << root.status();
  Output table = embedding.variables()[0].Read(root);
  auto session = MakeSession(root, 1);
  ASSERT_NE(session, nullptr);
  Fetch(*session, {}, {embedding.variables()[0].initializer()});
  std::vector<Tensor> values = Fetch(*session, {rows, table});
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0].shape(), TensorShape({2, 2, 3}));
  for (int k = 0; k < 4; ++k) {
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(values[0].data<float>()[k * 3 + j],
                values[1].data<float>()[ids.data<int64_t>()[k] * 3 + j]);
    }
  }
  // An id out of range fails the step, naming it.
  Scope other = Scope::NewRootScope();
  Embedding small(5, 3);
  Output bad = small(other, ops::Const(other, Tensor::FromVector<int64_t>({5})));
  auto other_session = MakeSession(other, 1);
  ASSERT_NE(other_session, nullptr);
  Fetch(*other_session, {}, {small.variables()[0].initializer()});
  std::vector<Tensor> outputs;
  Status status = other_session->Run({}, {bad.name()}, {}, &outputs);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("5"));
  Scope floats = Scope::NewRootScope();
  embedding(floats, ops::Const(floats, Input(TensorShape({2}))));
  EXPECT_THAT(floats.status().message(), HasSubstr("needs int32 or int64 ids"));
}

}  // namespace
}  // namespace weft::train
