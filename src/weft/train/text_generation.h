// Sampling text from a trained CharTransformer (`weft generate`): the prompt's bytes go through the
// model once, filling a key/value cache, then each new byte is drawn from the last position's
// distribution (softened by a temperature, optionally cut to the top k bytes) and fed back alone,
// so a token costs one position's work. Not thread-safe (it runs the model's session).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "weft/core/statusor.h"
#include "weft/train/char_transformer.h"

namespace weft::train {

struct GenerateOptions {
  int64_t tokens = 200;      // bytes to draw after the prompt
  double temperature = 1.0;  // > 0; 1 samples the model's distribution, lower sharpens it
  int top_k = 0;             // 0: every byte; else only the k most likely
  uint64_t seed = 1;         // the same seed draws the same text
};

// W6's model (CharTransformer's default options) with the weights of the latest checkpoint in
// `checkpoint_dir` (a ModelCheckpoint's or `weft train --checkpoint-dir`'s), built for inference.
// NotFound naming the directory when it holds no checkpoint; a checkpoint of another model fails
// naming the variable it lacks and the checkpoint.
StatusOr<std::unique_ptr<CharTransformer>> LoadCharTransformer(const std::string& checkpoint_dir);

// The bytes drawn after `prompt`. InvalidArgument naming the value for an empty prompt, a
// temperature that is not positive, a negative top_k or tokens, or a prompt plus tokens longer
// than the model's context (its position table). The model must be built with its weights.
StatusOr<std::string> Generate(CharTransformer& model, std::string_view prompt,
                               const GenerateOptions& options);

}  // namespace weft::train
