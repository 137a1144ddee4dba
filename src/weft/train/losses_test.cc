// Losses and metrics on a score per position ([batch, time, classes]) against the same values
// flattened to [batch * time, classes], the accuracy of binary logits, and the host-side check of
// binary labels.
#include "weft/train/losses.h"

#include <cmath>
#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/distribute/testing/session_test_util.h"
#include "weft/train/metrics.h"

namespace weft::train {
namespace {

using distribute::testing::Fetch;
using distribute::testing::MakeSession;
using ::testing::HasSubstr;

// Deterministic scores in [-2, 2).
Tensor Scores(const TensorShape& shape) {
  Tensor tensor(DataType::kFloat, shape);
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    tensor.data<float>()[i] = static_cast<float>(((i * 37) % 23) / 5.75 - 2.0);
  }
  return tensor;
}

// Class ids in [0, classes).
Tensor Ids(const TensorShape& shape, int64_t classes) {
  Tensor tensor(DataType::kInt64, shape);
  for (int64_t i = 0; i < tensor.NumElements(); ++i) tensor.data<int64_t>()[i] = (i * 5) % classes;
  return tensor;
}

// A copy of `tensor` with the same values in `shape`.
Tensor Reshaped(const Tensor& tensor, const TensorShape& shape) {
  Tensor out(tensor.dtype(), shape);
  std::memcpy(out.raw_data(), tensor.raw_data(), tensor.TotalBytes());
  return out;
}

// The value `build` makes from Consts of `labels` and `predictions`, run in a one-device session.
template <typename Build>
std::vector<float> Run(const Tensor& labels, const Tensor& predictions, Build build) {
  Scope root = Scope::NewRootScope();
  Output value = build(root, ops::Const(root, labels), ops::Const(root, predictions));
  EXPECT_TRUE(root.ok()) << root.status();
  if (!root.ok()) return {};
  auto session = MakeSession(root, 1);
  if (session == nullptr) return {};
  std::vector<Tensor> values = Fetch(*session, {value});
  if (values.empty()) return {};
  return std::vector<float>(values[0].data<float>(),
                            values[0].data<float>() + values[0].NumElements());
}

// A loss's value on labels and predictions.
std::vector<float> LossValue(const Loss& loss, const Tensor& labels, const Tensor& predictions) {
  return Run(labels, predictions, [&](const Scope& scope, const Output& y, const Output& p) {
    return loss(scope, y, p);
  });
}

// A metric's mean over its values.
float MetricMean(const Metric& metric, const Tensor& labels, const Tensor& predictions) {
  std::vector<float> values = Run(
      labels, predictions,
      [&](const Scope& scope, const Output& y, const Output& p) { return metric(scope, y, p); });
  float sum = 0;
  for (float value : values) sum += value;
  return values.empty() ? -1 : sum / static_cast<float>(values.size());
}

TEST(LossesTest, SparseCategoricalCrossentropyOfPerTokenLogitsIsTheFlatMean) {
  const Tensor logits = Scores(TensorShape({3, 4, 5}));
  const Tensor ids = Ids(TensorShape({3, 4}), 5);
  for (bool from_logits : {true, false}) {
    SCOPED_TRACE(from_logits ? "logits" : "probabilities");
    // Probabilities must be positive: the softmax of the scores stands in for them.
    Tensor scores = logits;
    if (!from_logits) {
      scores = Tensor(DataType::kFloat, logits.shape());
      for (int64_t row = 0; row < 12; ++row) {
        float sum = 0;
        for (int c = 0; c < 5; ++c) sum += std::exp(logits.data<float>()[row * 5 + c]);
        for (int c = 0; c < 5; ++c) {
          scores.data<float>()[row * 5 + c] = std::exp(logits.data<float>()[row * 5 + c]) / sum;
        }
      }
    }
    const Loss loss = SparseCategoricalCrossentropy(from_logits);
    std::vector<float> flat =
        LossValue(loss, Reshaped(ids, TensorShape({12})), Reshaped(scores, TensorShape({12, 5})));
    ASSERT_EQ(flat.size(), 1u);
    std::vector<float> per_token = LossValue(loss, ids, scores);
    ASSERT_EQ(per_token.size(), 1u);
    EXPECT_NEAR(per_token[0], flat[0], 1e-5);
    // Labels with a trailing 1, as [batch, time, 1].
    std::vector<float> trailing = LossValue(loss, Reshaped(ids, TensorShape({3, 4, 1})), scores);
    ASSERT_EQ(trailing.size(), 1u);
    EXPECT_NEAR(trailing[0], flat[0], 1e-5);
  }
}

TEST(LossesTest, CategoricalCrossentropyOfPerTokenScoresIsTheFlatMean) {
  const Tensor logits = Scores(TensorShape({2, 3, 4}));
  Tensor one_hot(DataType::kFloat, TensorShape({2, 3, 4}));
  for (int64_t i = 0; i < one_hot.NumElements(); ++i) {
    one_hot.data<float>()[i] = (i / 4) % 4 == i % 4 ? 1.0f : 0.0f;
  }
  for (bool from_logits : {true, false}) {
    SCOPED_TRACE(from_logits ? "logits" : "scores");
    Tensor scores = logits;
    if (!from_logits) {  // positive scores, normalized by the loss
      scores = Tensor(DataType::kFloat, logits.shape());
      for (int64_t i = 0; i < 24; ++i) scores.data<float>()[i] = logits.data<float>()[i] + 2.5f;
    }
    const Loss loss = CategoricalCrossentropy(from_logits);
    std::vector<float> flat = LossValue(loss, Reshaped(one_hot, TensorShape({6, 4})),
                                        Reshaped(scores, TensorShape({6, 4})));
    std::vector<float> per_token = LossValue(loss, one_hot, scores);
    ASSERT_EQ(flat.size(), 1u);
    ASSERT_EQ(per_token.size(), 1u);
    EXPECT_NEAR(per_token[0], flat[0], 1e-5);
  }
}

TEST(LossesTest, AccuracyOfPerTokenLogitsIsTheFlatAccuracy) {
  const Tensor logits = Scores(TensorShape({3, 4, 5}));
  // Positions 0, 3, 6, 9 labelled with their argmax (right), the others with another class.
  Tensor ids(DataType::kInt64, TensorShape({3, 4}));
  for (int64_t p = 0; p < 12; ++p) {
    const float* row = logits.data<float>() + p * 5;
    int64_t best = 0;
    for (int64_t c = 1; c < 5; ++c) best = row[c] > row[best] ? c : best;
    ids.data<int64_t>()[p] = p % 3 == 0 ? best : (best + 1) % 5;
  }
  const Metric sparse = SparseCategoricalAccuracy();
  const float flat =
      MetricMean(sparse, Reshaped(ids, TensorShape({12})), Reshaped(logits, TensorShape({12, 5})));
  EXPECT_FLOAT_EQ(flat, 4.0f / 12.0f);
  EXPECT_NEAR(MetricMean(sparse, ids, logits), flat, 1e-6);
  EXPECT_NEAR(MetricMean(sparse, Reshaped(ids, TensorShape({3, 4, 1})), logits), flat, 1e-6);
  // The same ids one-hot, with categorical accuracy.
  Tensor one_hot(DataType::kFloat, TensorShape({3, 4, 5}));
  for (int64_t i = 0; i < 60; ++i) {
    one_hot.data<float>()[i] = ids.data<int64_t>()[i / 5] == i % 5 ? 1.0f : 0.0f;
  }
  EXPECT_NEAR(MetricMean(CategoricalAccuracy(), one_hot, logits), flat, 1e-6);
}

TEST(LossesTest, LabelsThatAreNotClassIdsOfThePredictionsAreRefused) {
  Scope root = Scope::NewRootScope();
  Output logits = ops::Const(root, Scores(TensorShape({3, 4, 5})));
  Output wrong = ops::Const(root, Ids(TensorShape({3, 5}), 5));
  SparseCategoricalCrossentropy(true)(root, wrong, logits);
  ASSERT_FALSE(root.ok());
  EXPECT_THAT(root.status().message(), HasSubstr("labels must be class ids shaped like"));
  EXPECT_THAT(root.status().message(), HasSubstr("[3,5]"));
}

// Logits of a binary classifier: "accuracy" thresholds them at 0 (a probability of 0.5), not at
// 0.5 (the regression this guards: 0.721 reported where 0.758 was true).
TEST(MetricsTest, BinaryAccuracyOfLogitsThresholdsAtZero) {
  const Tensor labels = Tensor::FromVector<float>({0, 1, 1, 0, 1}, TensorShape({5, 1}));
  // Logit 0.3 is a probability of 0.57: class 1, right; at a threshold of 0.5 it would be wrong.
  const Tensor logits =
      Tensor::FromVector<float>({-0.2f, 0.3f, 0.7f, -1.0f, 0.1f}, TensorShape({5, 1}));
  for (const char* name : {"accuracy", "binary_accuracy"}) {
    SCOPED_TRACE(name);
    auto on_logits = GetMetric(name, BinaryCrossentropy(/*from_logits=*/true));
    ASSERT_TRUE(on_logits.ok()) << on_logits.status();
    EXPECT_FLOAT_EQ(MetricMean(*on_logits, labels, logits), 1.0f);
    // Probabilities keep the threshold of 0.5: 0.3 and 0.1 are then class 0.
    auto on_probabilities = GetMetric(name, BinaryCrossentropy(/*from_logits=*/false));
    ASSERT_TRUE(on_probabilities.ok()) << on_probabilities.status();
    EXPECT_FLOAT_EQ(MetricMean(*on_probabilities, labels, logits), 0.6f);
  }
}

TEST(MetricsTest, BinaryLabelsOutsideZeroToOneAreRefusedNamingTheFirst) {
  const Tensor good = Tensor::FromVector<float>({0, 1, 0.25f}, TensorShape({3}));
  EXPECT_TRUE(BinaryCrossentropy(true).CheckLabels(good).ok());
  const Tensor two = Tensor::FromVector<int64_t>({0, 1, 2, 3}, TensorShape({4}));
  Status refused = BinaryCrossentropy(true).CheckLabels(two);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.message(), HasSubstr("binary_crossentropy: label 2 (element 2"));
  auto accuracy = GetMetric("accuracy", BinaryCrossentropy(true));
  ASSERT_TRUE(accuracy.ok()) << accuracy.status();
  EXPECT_THAT(accuracy->CheckLabels(two).message(), HasSubstr("binary_accuracy: label 2"));
  // Other losses take any labels on the host.
  EXPECT_TRUE(MeanSquaredError().CheckLabels(two).ok());
}

}  // namespace
}  // namespace weft::train
