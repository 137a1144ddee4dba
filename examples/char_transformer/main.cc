// char_transformer: workload W6 (a byte-level decoder-only transformer on Debian's fortunes
// corpus) written as a user would: the model, AdamW with warmup, cosine decay and clipping, and
// Model::Fit under the mixed_bfloat16 policy, then a sample of text from the trained model.
//   char_transformer [--max-steps N] [--precision fp32|bf16]     (defaults: 50 steps, bf16)
// Ends with one JSON line of figures (only the training is timed).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "weft/data/text.h"
#include "weft/train/char_transformer.h"
#include "weft/train/learning_rate_schedule.h"
#include "weft/train/text_generation.h"

using namespace weft;         // NOLINT: an example, kept short
using namespace weft::train;  // NOLINT

// AdamW at 1e-3 (betas 0.9/0.95, weight decay 0.1 on kernels and tables only), 100 warmup steps,
// cosine decay to 1e-4 at step 2,000, gradients clipped to a global norm of 1.
StatusOr<std::unique_ptr<Optimizer>> W6Optimizer() {
  WEFT_ASSIGN_OR_RETURN(
      std::unique_ptr<Optimizer> optimizer,
      NewAdamWOptimizer(1e-3, /*weight_decay=*/0.1, /*beta1=*/0.9,
                        /*beta2=*/0.95, /*epsilon=*/1e-7, {.decay_if = DecayRankAtLeast(2)}));
  WEFT_ASSIGN_OR_RETURN(
      auto schedule,
      WarmupCosineDecay(
          {.peak = 1e-3, .final_learning_rate = 1e-4, .warmup_steps = 100, .total_steps = 2000}));
  WEFT_RETURN_IF_ERROR(optimizer->SetLearningRateSchedule(std::move(schedule)));
  WEFT_RETURN_IF_ERROR(optimizer->SetGlobalClipNorm(1.0));
  return optimizer;
}

int Fail(const Status& status) {
  std::fprintf(stderr, "char_transformer: %s\n", status.ToString().c_str());
  return 1;
}

int main(int argc, char** argv) {
  int64_t max_steps = 50;
  std::string precision = "bf16";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--max-steps") == 0) max_steps = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--precision") == 0) precision = argv[i + 1];
  }
  auto text = data::ReadTextCorpus();  // /usr/share/games/fortunes
  if (!text.ok()) return Fail(text.status());
  auto split = data::SplitText(std::move(*text), /*held_out=*/0.1, /*min_part_bytes=*/129);
  if (!split.ok()) return Fail(split.status());
  auto model = CharTransformer::Create({.context = 128, .seed = 1});
  if (!model.ok()) return Fail(model.status());
  auto optimizer = W6Optimizer();
  if (!optimizer.ok()) return Fail(optimizer.status());
  auto policy = DTypePolicy::FromName(precision == "bf16" ? "mixed_bfloat16" : "float32");
  if (!policy.ok()) return Fail(policy.status());
  Status compiled =
      (*model)->Compile(std::move(*optimizer), SparseCategoricalCrossentropy(/*from_logits=*/true),
                        {}, {.seed = 1, .dtype_policy = *policy});
  if (!compiled.ok()) return Fail(compiled);

  // 32 windows of 128 bytes a step, at seeded random offsets of the training part.
  data::Dataset windows = data::RandomByteWindows(split->train, 128, max_steps * 32, /*seed=*/1);
  const auto start = std::chrono::steady_clock::now();
  auto history = (*model)->Fit(windows.Batch(32, /*drop_remainder=*/true), {.epochs = 1});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!history.ok()) return Fail(history.status());
  auto validation =
      (*model)->Evaluate(data::ConsecutiveByteWindows(split->validation, 128, 64).Batch(32));
  if (!validation.ok()) return Fail(validation.status());
  auto sample = Generate(**model, "The ", {.tokens = 40, .temperature = 0.8, .seed = 1});
  if (!sample.ok()) return Fail(sample.status());
  std::printf("%s\n", sample->c_str());
  std::printf(
      "{\"tokens_per_sec\": %.1f, \"steps\": %lld, \"precision\": \"%s\", "
      "\"final_loss\": %.4f, \"validation_loss\": %.4f}\n",
      static_cast<double>(max_steps * 32 * 128) / seconds, static_cast<long long>(max_steps),
      precision.c_str(), history->epochs.back().at("loss"), validation->at("loss"));
  return 0;
}
