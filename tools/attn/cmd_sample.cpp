// attn sample: generates text with a trained character language model
// (`attn train --task charlm`).
#include <cmath>
#include <cstdio>
#include <string>

#include "attn/decode/sample.h"
#include "attn/number_format.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {

void add_sample_command(CLI::App& app) {
  struct Args {
    std::string model;
    std::string prompt;
    int count = 5;
    models::SampleOptions options;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("sample", "Generate text with a causal language model (one sample a line)");
  cmd->add_option("--model", args->model, "Language-model checkpoint (RUN/model.safetensors)")->required();
  cmd->add_option("--prompt", args->prompt, "Text to continue (default: start a sentence)");
  cmd->add_option("-n,--count", args->count, "Samples to draw")->capture_default_str();
  cmd->add_option("--max-chars", args->options.max_len, "Characters per sample at most")->capture_default_str();
  cmd->add_option("--temperature", args->options.temperature, "Sampling temperature (0: greedy)")
      ->capture_default_str();
  cmd->add_option("--top-k", args->options.top_k, "Sample among the k likeliest characters (0: all)")
      ->capture_default_str();
  cmd->add_option("--seed", args->options.seed, "Random seed")->capture_default_str()->check(integer_at_least(0));
  add_threads_option(cmd);
  cmd->callback([args] {
    if (args->count < 1) throw UsageError("--count must be >= 1");
    if (args->options.max_len < 1) throw UsageError("--max-chars must be >= 1");
    if (!(args->options.temperature >= 0.0f) || !std::isfinite(args->options.temperature))
      throw UsageError("--temperature must be finite and >= 0, got " + format_number(args->options.temperature));
    if (args->options.top_k < 0) throw UsageError("--top-k must be >= 0");
    require_checkpoint(args->model, {decode::CheckpointKind::lm});
    decode::LoadedLm lm = decode::load_char_lm(args->model);
    for (int i = 0; i < args->count; ++i) {
      models::SampleOptions o = args->options;
      o.seed = args->options.seed + static_cast<uint64_t>(i);
      std::printf("%s\n", decode::sample_text(lm, args->prompt, o).c_str());
    }
  });
}

ATTN_REGISTER_COMMAND(64, add_sample_command);

}  // namespace attn::cli
