// CharTransformer: a small one learns a repeating text through Fit (the loss far below a uniform
// guess's), on one device and on two mirrored replicas alike; its logits cover every position;
// bad options and a context longer than its position table are named.
#include "weft/train/char_transformer.h"

#include <cmath>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/data/text.h"
#include "weft/distribute/strategy.h"
#include "weft/framework/node_def_util.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;

CharTransformerOptions Small() {
  return {.context = 16, .layers = 2, .model_dim = 32, .heads = 4, .mlp_dim = 64, .seed = 3};
}

std::shared_ptr<const std::string> RepeatingText() {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the cat sat on the mat. ";
  return std::make_shared<const std::string>(std::move(text));
}

// The precision attr of every FusedAttention and FusedAttentionGrad node of `model`'s graph.
std::vector<std::string> AttentionPrecisions(Model& model) {
  std::vector<std::string> precisions;
  Status added = model.AddToGraph([&](const Scope& root) {
    for (const Node* node : root.graph()->nodes()) {
      if (node->type_string() != "FusedAttention" && node->type_string() != "FusedAttentionGrad") {
        continue;
      }
      std::string precision;
      WEFT_RETURN_IF_ERROR(GetNodeAttr(node->def(), "precision", &precision));
      precisions.push_back(precision);
    }
    return Status::OK();
  });
  EXPECT_TRUE(added.ok()) << added;
  return precisions;
}

// The loss on held windows after training a Small() model for 40 steps of 8 windows under
// `policy` (DTypePolicy's names); `attention_precisions` gets its attention nodes' precisions.
double TrainedLoss(const distribute::Strategy* strategy, std::string_view policy = "float32",
                   std::vector<std::string>* attention_precisions = nullptr) {
  auto dtype_policy = DTypePolicy::FromName(policy);
  EXPECT_TRUE(dtype_policy.ok()) << dtype_policy.status();
  if (!dtype_policy.ok()) return -1;
  auto model = CharTransformer::Create(Small());
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return -1;
  Status compiled =
      (*model)->Compile(NewAdamOptimizer(1e-2), SparseCategoricalCrossentropy(/*from_logits=*/true),
                        {}, {.strategy = strategy, .dtype_policy = *dtype_policy});
  EXPECT_TRUE(compiled.ok()) << compiled;
  auto history =
      (*model)->Fit(data::RandomByteWindows(RepeatingText(), 16, 320, 5).Batch(8), {.epochs = 1});
  EXPECT_TRUE(history.ok()) << history.status();
  if (!history.ok()) return -1;
  auto logits = (*model)->Predict(data::ConsecutiveByteWindows(RepeatingText(), 16, 3).Batch(3));
  EXPECT_TRUE(logits.ok()) << logits.status();
  if (logits.ok()) {
    EXPECT_EQ(logits->shape(), TensorShape({3, 16, 256}));
  }
  auto logs = (*model)->Evaluate(data::ConsecutiveByteWindows(RepeatingText(), 16, 64).Batch(16));
  EXPECT_TRUE(logs.ok()) << logs.status();
  if (attention_precisions != nullptr) *attention_precisions = AttentionPrecisions(**model);
  return logs.ok() ? logs->at("loss") : -1;
}

TEST(CharTransformerTest, LearnsARepeatingText) {
  const double loss = TrainedLoss(nullptr);
  // A uniform guess over bytes costs log(256) = 5.5 nats, the text's byte frequencies alone about
  // 2.2; its next byte follows from the ones before (0.44 after these 40 steps).
  EXPECT_LT(loss, 0.8);
  EXPECT_GT(loss, 0);
}

TEST(CharTransformerTest, LearnsAsWellUnderMixedBFloat16) {
  std::vector<std::string> full_precisions, mixed_precisions;
  const double full = TrainedLoss(nullptr, "float32", &full_precisions);
  const double mixed = TrainedLoss(nullptr, "mixed_bfloat16", &mixed_precisions);
  // Each layer's attention and its gradient multiply as the policy says.
  EXPECT_GE(full_precisions.size(), 2u * Small().layers);
  EXPECT_THAT(full_precisions, ::testing::Each(std::string("float32")));
  EXPECT_GE(mixed_precisions.size(), 2u * Small().layers);
  EXPECT_THAT(mixed_precisions, ::testing::Each(std::string("bfloat16")));
  EXPECT_LT(mixed, 0.8);
  EXPECT_GT(mixed, 0);
  // Rounded products take another path than float32's, to about the same place.
  EXPECT_NE(mixed, full);
  EXPECT_NEAR(mixed, full, 0.2 * full);
}

TEST(CharTransformerTest, TwoMirroredReplicasTrainAsOneDevice) {
  auto mirrored = distribute::MirroredStrategy::Create({"/cpu:0", "/cpu:1"});
  ASSERT_TRUE(mirrored.ok()) << mirrored.status();
  const double one = TrainedLoss(nullptr);
  const double two = TrainedLoss(mirrored->get());
  EXPECT_NEAR(two, one, 1e-3 * std::abs(one));
}

TEST(CharTransformerTest, BadOptionsAndALongContextAreNamed) {
  CharTransformerOptions options = Small();
  options.heads = 5;
  EXPECT_THAT(CharTransformer::Create(options).status().message(),
              HasSubstr("heads (5) must divide model_dim (32)"));
  options = Small();
  options.layers = 0;
  EXPECT_THAT(CharTransformer::Create(options).status().message(), HasSubstr("layers is 0"));
  auto model = CharTransformer::Create(Small());
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE(
      (*model)
          ->Compile(NewAdamOptimizer(1e-3), SparseCategoricalCrossentropy(/*from_logits=*/true))
          .ok());
  auto history = (*model)->Fit(data::RandomByteWindows(RepeatingText(), 32, 16, 5).Batch(8));
  ASSERT_FALSE(history.ok());
  EXPECT_THAT(history.status().message(),
              HasSubstr("an input of 32 positions is longer than the table's 16"));
}

}  // namespace
}  // namespace weft::train
