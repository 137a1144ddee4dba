// Generation from a CharTransformer: the cached decoding steps give the logits of a whole forward
// pass at every position, greedy generation (top_k 1) equals the argmax of whole passes, the same
// seed draws the same text, and bad requests are named.
#include "weft/train/text_generation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/data/text.h"

namespace weft::train {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kContext = 16;

std::unique_ptr<CharTransformer> TrainedModel() {
  auto model = CharTransformer::Create(
      {.context = kContext, .layers = 2, .model_dim = 32, .heads = 4, .mlp_dim = 64, .seed = 3});
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  EXPECT_TRUE(
      (*model)
          ->Compile(NewAdamOptimizer(1e-2), SparseCategoricalCrossentropy(/*from_logits=*/true))
          .ok());
  std::string text;
  for (int i = 0; i < 100; ++i) text += "the cat sat on the mat. ";
  auto history = (*model)->Fit(
      data::RandomByteWindows(std::make_shared<const std::string>(text), kContext, 160, 5)
          .Batch(8));
  EXPECT_TRUE(history.ok()) << history.status();
  return std::move(model).value();
}

// The model's logits [1, kContext, 256] for `bytes` (padded with spaces to kContext) in one pass.
Tensor WholePass(CharTransformer& model, const std::string& bytes) {
  Tensor tokens(DataType::kInt32, TensorShape({1, kContext}));
  for (int64_t i = 0; i < kContext; ++i) {
    tokens.data<int32_t>()[i] =
        i < static_cast<int64_t>(bytes.size()) ? static_cast<unsigned char>(bytes[i]) : ' ';
  }
  auto logits = model.Predict(data::Dataset::FromTensors({tokens}).Batch(1));
  EXPECT_TRUE(logits.ok()) << logits.status();
  return logits.ok() ? *logits : Tensor();
}

TEST(TextGenerationTest, GreedyDecodingWithTheCacheEqualsWholePasses) {
  std::unique_ptr<CharTransformer> model = TrainedModel();
  ASSERT_NE(model, nullptr);
  const std::string prompt = "the c";
  auto generated = Generate(*model, prompt, {.tokens = 8, .top_k = 1});
  ASSERT_TRUE(generated.ok()) << generated.status();
  ASSERT_EQ(generated->size(), 8u);
  // Each drawn byte is the argmax of a whole pass over the text before it (later positions do
  // not change earlier ones: the mask is causal).
  std::string text = prompt;
  for (char byte : *generated) {
    Tensor logits = WholePass(*model, text);
    ASSERT_EQ(logits.shape(), TensorShape({1, kContext, 256}));
    const float* row = logits.data<float>() + (text.size() - 1) * 256;
    const int64_t best = std::max_element(row, row + 256) - row;
    EXPECT_EQ(static_cast<unsigned char>(byte), best) << "after '" << text << "'";
    text.push_back(byte);
  }
  // The model learned some of the text in its 20 steps: greedy decoding continues the word.
  EXPECT_EQ(generated->substr(0, 3), "at ");
}

TEST(TextGenerationTest, TheSameSeedDrawsTheSameText) {
  std::unique_ptr<CharTransformer> model = TrainedModel();
  ASSERT_NE(model, nullptr);
  auto first = Generate(*model, "the", {.tokens = 12, .temperature = 1.5, .seed = 9});
  auto again = Generate(*model, "the", {.tokens = 12, .temperature = 1.5, .seed = 9});
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*first, *again);
}

TEST(TextGenerationTest, BadRequestsAreNamed) {
  std::unique_ptr<CharTransformer> model = TrainedModel();
  ASSERT_NE(model, nullptr);
  EXPECT_THAT(Generate(*model, "", {}).status().message(), HasSubstr("the prompt is empty"));
  EXPECT_THAT(Generate(*model, "abc", {.tokens = 14}).status().message(),
              HasSubstr("need 17 positions, more than the model's context of 16"));
  EXPECT_THAT(Generate(*model, "abc", {.tokens = 2, .temperature = 0}).status().message(),
              HasSubstr("temperature must be positive"));
  EXPECT_THAT(Generate(*model, "abc", {.tokens = 2, .top_k = -1}).status().message(),
              HasSubstr("top_k (-1)"));
}

}  // namespace
}  // namespace weft::train
