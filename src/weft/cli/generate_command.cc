#include "weft/cli/generate_command.h"

#include <cstdio>

#include "weft/train/text_generation.h"

namespace weft::cli {

CLI::App* AddGenerateCommand(CLI::App& app, GenerateFlags& flags) {
  CLI::App* command = app.add_subcommand(
      "generate", "Sample text from a character transformer trained by weft train");
  command
      ->add_option("--checkpoint-dir", flags.checkpoint_dir,
                   "Directory of checkpoints of `weft train --model char_transformer` (its latest "
                   "is used)")
      ->required();
  command->add_option("--prompt", flags.prompt, "Text to continue")->required();
  command
      ->add_option("--tokens", flags.tokens,
                   "Bytes to draw (prompt and tokens together at most the model's context, 128)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--temperature", flags.temperature,
                   "Softens (above 1) or sharpens (below 1) the model's distribution")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--top-k", flags.top_k, "Draw only from the k likeliest bytes (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--seed", flags.seed, "The same seed draws the same text")
      ->capture_default_str();
  return command;
}

int RunGenerateCommand(const GenerateFlags& flags) {
  StatusOr<std::unique_ptr<train::CharTransformer>> model =
      train::LoadCharTransformer(flags.checkpoint_dir);
  if (!model.ok()) {
    std::fprintf(stderr, "weft generate: %s\n", model.status().ToString().c_str());
    const bool bad_input = IsNotFound(model.status()) || IsInvalidArgument(model.status()) ||
                           IsDataLoss(model.status());
    return bad_input ? 2 : 1;
  }
  StatusOr<std::string> text = train::Generate(**model, flags.prompt,
                                               {.tokens = flags.tokens,
                                                .temperature = flags.temperature,
                                                .top_k = flags.top_k,
                                                .seed = static_cast<uint64_t>(flags.seed)});
  if (!text.ok()) {
    std::fprintf(stderr, "weft generate: %s\n", text.status().ToString().c_str());
    return IsInvalidArgument(text.status()) ? 2 : 1;
  }
  std::fprintf(stdout, "%s%s\n", flags.prompt.c_str(), text->c_str());
  return 0;
}

}  // namespace weft::cli
